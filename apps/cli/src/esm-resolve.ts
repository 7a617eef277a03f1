/**
 * `import.meta.resolve` of a module in `dist/`, for the CommonJS executable (`dist/bin.cjs`, which
 * has no `import.meta`) to hand the bundle: it requires this ES module when the bundle first
 * resolves a package (the engine SDKs, `@packwarden/engines` sdk-paths.ts).
 */
export function resolve(specifier: string): string {
  return import.meta.resolve(specifier);
}
