import { describe, expect, it } from "vitest";
import { applyExpectations, parseExpectations } from "../../src/conformance/expectations.js";
import type { Result } from "../../src/conformance/types.js";

function result(status: Result["status"]): Result {
  return {
    op: "gelu",
    dtype: "float32",
    check: "extremes",
    status,
    message: "",
    seed: 0,
    sample: 0,
    samples: 1,
    input: "",
  };
}

const file = parseExpectations(
  'expectations:\n  - op: gelu\n    check: extremes\n    cpu: "AVX512*"\n    reason: "AVX512 gives NaN at +inf"\n',
  "e.yaml",
);

describe("expectations for one CPU capability (Note [CPU capability])", () => {
  it.each([
    ["a failure on that capability is expected", "fail", "AVX512", "xfail"],
    ["a pass on another capability is a pass, not XPASS", "pass", "AVX2", "pass"],
    ["a failure on another capability stays a failure", "fail", "AVX2", "fail"],
    ["an unknown capability applies nothing", "fail", undefined, "fail"],
    ["a pass on that capability is XPASS", "pass", "AVX512", "xpass"],
  ] as const)("%s", (_name, given, cpu, want) => {
    expect(applyExpectations([result(given)], file.expectations, cpu)[0]?.status).toBe(want);
  });

  it("refuses a cpu that is not a string", () => {
    expect(() => parseExpectations("expectations:\n  - op: gelu\n    cpu: 3\n    reason: r\n", "e.yaml")).toThrow();
  });
});
