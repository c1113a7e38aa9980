#!/usr/bin/env node
// Thin entry: all logic lives in src/cli (compiled to dist/ by `npm ci` via prepare).
import { main } from "../dist/cli/main.js";

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    // A bug, not a user error: show the stack.
    console.error(err);
    process.exitCode = 2;
  },
);
