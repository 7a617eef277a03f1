import { defineConfig } from 'tsup';

// The CLI bundles its libraries and their dependencies: one process start loads a few files
// instead of hundreds of modules (zod and yaml alone cost ~80 ms unbundled on Node 20), and
// commands still load their own chunk only when they run (code splitting).
export default defineConfig({
  entry: ['src/index.ts', 'src/bin.ts'],
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  // Commander's types are inlined: consumers do not install the bundled commander (TS2307).
  dts: { entry: 'src/index.ts', resolve: ['commander'] },
  sourcemap: true,
  clean: true,
  splitting: true,
  // Everything is bundled except the engines' optional SDKs: users install those next to the CLI
  // when a pack uses them (they are optional peer dependencies), and they are loaded only then.
  noExternal: [/^(?!@anthropic-ai\/claude-agent-sdk|@openai\/codex-sdk)/],
  external: ['@anthropic-ai/claude-agent-sdk', '@openai/codex-sdk'],
  removeNodeProtocol: false,
  banner: {
    // Some bundled dependencies are CommonJS and call require() for Node built-ins.
    js: "import { createRequire as __packwardenCreateRequire } from 'node:module'; const require = __packwardenCreateRequire(import.meta.url);",
  },
  esbuildOptions(options) {
    options.mainFields = ['module', 'main'];
    // Workspace libraries are bundled from their sources: no need to build them first.
    options.conditions = ['@packwarden/source', 'module', 'import', 'node'];
  },
});
