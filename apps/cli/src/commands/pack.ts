import type { Command } from 'commander';
import type { CliIo } from '../io.js';
import type { RunState } from '../program.js';

/**
 * `packwarden pack …`. Each action loads its libraries when it runs, so `--help` and cheap
 * commands do not pay for yaml, zod or the hashing code.
 */
export function registerPackCommands(program: Command, io: CliIo, state: RunState): void {
  const pack = program
    .command('pack')
    .description('Inspect, validate and digest Agent Packs')
    .addHelpText(
      'after',
      `
A <pack> is a path (./my-pack, /abs/path) or the name of an installed pack (my-pack,
my-pack@1.2.0): looked up in ./.packwarden/agents/<name>, then $PACKWARDEN_HOME/agents/<name>/
(default ~/.packwarden) following its current.txt.`,
    );

  pack
    .command('list')
    .description('List installed packs (workspace .packwarden/agents and $PACKWARDEN_HOME/agents)')
    .option('--json', 'print a JSON document')
    .action(async (options: { json?: boolean }) => {
      const { packList } = await import('./pack-actions.js');
      state.exitCode = await packList(io, options);
    });

  pack
    .command('validate')
    .description("Check a pack's agent.yaml against the Agent Pack Specification v1")
    .argument('<pack>', 'pack path or installed pack name')
    .option('--json', 'print a JSON document')
    .addHelpText('after', '\nExit codes: 0 valid, 1 invalid or not found, 2 bad usage.')
    .action(async (ref: string, options: { json?: boolean }) => {
      const { packValidate } = await import('./pack-actions.js');
      state.exitCode = await packValidate(io, ref, options);
    });

  pack
    .command('info')
    .description(
      'Show what a pack is: identity, engine, permissions, signature file, size and digest',
    )
    .argument('<pack>', 'pack path or installed pack name')
    .option('--json', 'print a JSON document')
    .action(async (ref: string, options: { json?: boolean }) => {
      const { packInfo } = await import('./pack-actions.js');
      state.exitCode = await packInfo(io, ref, options);
    });

  pack
    .command('digest')
    .description('Compute the Pack digest v1 of a pack: "<hex>  <name>@<version>"')
    .argument('<pack>', 'pack path or installed pack name')
    .option(
      '--files',
      'print the whole manifest the digest is the SHA-256 of (pipe it to sha256sum)',
    )
    .option('--json', 'print a JSON document (with --files: every entry)')
    .addHelpText(
      'after',
      `
The digest covers every file and symlink in the pack, dot folders included, except pack.sig at
the root. Specification: packages/pack-digest/SPEC.md.`,
    )
    .action(async (ref: string, options: { files?: boolean; json?: boolean }) => {
      const { packDigest } = await import('./pack-actions.js');
      state.exitCode = await packDigest(io, ref, options);
    });

  pack
    .command('schema')
    .description('Print the JSON Schema (draft 2020-12) of agent.yaml')
    .option('--json', 'the same JSON Schema (accepted for symmetry with other commands)')
    .option('-o, --output <file>', 'write it to a file instead of stdout')
    .action(async (options: { output?: string }) => {
      const { packSchema } = await import('./pack-actions.js');
      state.exitCode = await packSchema(io, options);
    });
}
