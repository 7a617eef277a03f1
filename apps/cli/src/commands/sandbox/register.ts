import { Option, type Command } from 'commander';
import type { CommandContext } from '../../context.js';
import { addExamples } from '../../help.js';
import { addTrustRootOptions } from '../../shared/trust.js';
import type { RunFlags, SandboxFlags } from './flags.js';

function isolationOption(): Option {
  return new Option(
    '--isolation <mode>',
    'confine pack code: required (refuse with exit 8 when a guarantee cannot be enforced), auto, off (default $PACKWARDEN_ISOLATION or auto)',
  ).choices(['required', 'auto', 'off']);
}

/** `packwarden sandbox` (the host inside a sandbox) and `packwarden run` (its driver). */
export function registerSandboxCommands(program: Command, { io, state }: CommandContext): void {
  const sandboxCommand = program
    .command('sandbox')
    .description('Serve one pack behind the runner-host protocol (the process inside a sandbox)');
  addTrustRootOptions(
    sandboxCommand
      // Not a requiredOption: commander would then demand it of `sandbox doctor` too.
      .option('--agent <pack>', 'pack path or installed pack name (required to serve)')
      .addOption(
        new Option(
          '--socket <path>',
          'listen on a unix socket (mode 0660); one of --socket and --stdio is required',
        ).conflicts('stdio'),
      )
      .option('--stdio', 'speak the protocol on stdin/stdout (one session)')
      .option('--state-dir <dir>', 'all writable state: HOME, caches, PACKWARDEN_HOME', '/state')
      .option('--workspace <dir>', 'the workspace engines work in (default <state-dir>/workspace)')
      .option(
        '--engine-home <dir>',
        'a PACKWARDEN_HOME whose engines/<id>/ holds installed engines (default <state-dir>/packwarden)',
      )
      .option(
        '--require-signed-pack',
        'copy the pack into the state dir, verify the copy, and run only that copy',
      )
      .option(
        '--cancel-grace-ms <ms>',
        'how long a cancelled engine may take before it is killed',
        '5000',
      )
      .addOption(isolationOption()),
  ).addHelpText(
    'after',
    `
The sandbox holds no credential: each run frame brings baseUrl and modelToken. It works in its own
workspace (a run frame's workspaceRoot is ignored, with one warning), keeps all state under
--state-dir, and sets PACKWARDEN_SANDBOX=1. Engine output never reaches the protocol channel:
console output goes to stderr, scrubbed of the run's secrets.
PACKWARDEN_REQUIRE_SIGNED_PACK=1 is the same as --require-signed-pack. The trust-root flags
serve only that check: given without it they are refused (exit 2), never silently ignored.
Exit codes: 0 closed cleanly, 1 boot failure or uncaught exception, 2 bad usage,
3–7 the pack's signature was refused (see "packwarden pack verify --help"),
8 isolation is required and a guarantee cannot be enforced (see "packwarden sandbox doctor").
Docs: docs/sandbox.md`,
  );
  addExamples(sandboxCommand, [
    'packwarden sandbox --agent ./my-pack --stdio',
    'packwarden sandbox --agent /packs/my-pack --socket /run/packwarden.sock --isolation required',
    'packwarden sandbox --agent my-pack --stdio --require-signed-pack --keys /etc/packwarden/keys.json',
  ]).action(async (options: SandboxFlags) => {
    const { sandbox } = await import('./serve.js');
    state.exitCode = await sandbox(io, options);
  });

  addExamples(
    sandboxCommand
      .command('doctor')
      .description('Prove each confinement guarantee by attempting the denied operation')
      .option('--json', 'print { schemaVersion: 1, guarantees: [{ id, status, by?, reason? }] }')
      .addHelpText(
        'after',
        `
Exit codes: 0 every guarantee (fs-read, fs-write, network, processes) is enforced, 8 otherwise.`,
      ),
    ['packwarden sandbox doctor', 'packwarden sandbox doctor --json'],
  ).action(async (options: { json?: boolean }) => {
    const { sandboxDoctor } = await import('./serve.js');
    state.exitCode = await sandboxDoctor(io, options);
  });

  const run = addTrustRootOptions(
    program
      .command('run')
      .description('Run one turn of a pack in a sandbox child process and show it')
      .argument('<pack>', 'pack path or installed pack name')
      .argument('<message>', 'what to ask the agent')
      .option('--json', 'print the protocol frames, one JSON object per line')
      .option('--base-url <url>', 'model gateway for this turn (default $PACKWARDEN_BASE_URL)')
      .addOption(
        new Option(
          '--model-token <token>',
          'model credential for this turn; visible to other local users: prefer $PACKWARDEN_MODEL_TOKEN or --model-token-file',
        ).conflicts('modelTokenFile'),
      )
      .option(
        '--model-token-file <file>',
        'read the model credential from FILE, or from stdin with "-" (default $PACKWARDEN_MODEL_TOKEN); sent only in the run frame',
      )
      .option('--model <id>', 'model id for this turn')
      .addOption(
        new Option('--file-access <level>', "narrow the pack's file access for this turn").choices([
          'none',
          'read',
          'write',
        ]),
      )
      .option('--require-signed-pack', 'the sandbox verifies a private copy and runs only that')
      .option(
        '--state-dir <dir>',
        'sandbox state (default $PACKWARDEN_HOME/sandbox/<pack name>-<id>, one per pack identity)',
      )
      .option('--workspace <dir>', 'the workspace (default <state-dir>/workspace)')
      .addOption(isolationOption()),
  ).addHelpText(
    'after',
    `
The model token comes from --model-token-file FILE|-, then $PACKWARDEN_MODEL_TOKEN; --model-token
works but puts the token on the command line, where every local user can read it (a warning says so).
The trust-root flags take effect with --require-signed-pack (or PACKWARDEN_REQUIRE_SIGNED_PACK=1)
only: given without it they are refused (exit 2), never silently ignored. A bare name that is both
a folder here and an installed pack is refused as ambiguous (exit 2): write ./name for the folder.
Exit codes: 0 the turn completed, 1 it failed, 2 bad usage, 8 isolation required but unavailable,
130 cancelled (Ctrl-C); a sandbox that cannot boot passes its exit code on.
On a terminal the turn streams as it happens and questions are asked; otherwise questions are
declined. --json prints every frame the sandbox sends (welcome first, the terminal frame last).`,
  );
  addExamples(run, [
    "packwarden run ./my-pack 'Summarise README.md' --model-token-file ~/.config/packwarden/token",
    "packwarden run my-pack 'Review the last commit' --file-access read --isolation required",
    "packwarden run ./my-pack 'Hello' --base-url http://127.0.0.1:8080 --json",
  ]).action(async (pack: string, message: string, options: RunFlags) => {
    const { runPack } = await import('./run.js');
    state.exitCode = await runPack(io, pack, message, options);
  });
}
