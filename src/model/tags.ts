/**
 * Translates tags.yaml (the operator tags a torch knows, e.g. `core`,
 * `pointwise`, `inplace_view`) into TagInfo objects. native_functions.yaml
 * entries may only use tags listed here, as torchgen enforces.
 */
import { UserError } from "../util/errors.js";
import { readYamlList } from "../yaml/operators.js";
import type { TagInfo } from "./types.js";

export function parseTagsYaml(text: string, file: string): TagInfo[] {
  const out: TagInfo[] = [];
  for (const e of readYamlList(text, file)) {
    const tag = e.value.tag;
    const desc = e.value.desc ?? "";
    if (typeof tag !== "string" || tag === "") {
      throw new UserError(`${file}:${e.line}:3: expected 'tag: <name>' in every entry`);
    }
    if (typeof desc !== "string") throw new UserError(`${file}:${e.line}:3: 'desc' of tag '${tag}' must be a string`);
    out.push({ tag, desc });
  }
  return out;
}
