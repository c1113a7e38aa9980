/**
 * This package's version (package.json's; a unit test keeps them equal). The
 * CLI prints it for `--version`, and `init` pins scaffolded projects' CI to it.
 */
export const VERSION = "0.1.0";
