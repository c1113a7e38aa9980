/**
 * The model's public surface in one import: types, schema parsing/printing,
 * the catalog loader.
 */
export * from "./catalog.js";
export * from "./types.js";
