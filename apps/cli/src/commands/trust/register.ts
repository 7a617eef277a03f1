import type { Command } from 'commander';
import type { CommandContext } from '../../context.js';
import { addExamples } from '../../help.js';
import { addTrustRootOptions, type TrustFlags } from '../../shared/trust.js';

/** `packwarden trust …`. */
export function registerTrustCommands(program: Command, { io, state }: CommandContext): void {
  const trust = program
    .command('trust')
    .description('Inspect the trust root that verification uses');
  addExamples(
    addTrustRootOptions(
      trust
        .command('show')
        .description(
          'Which source is configured, its status, keys (kid, thumbprint, validity), staleness and warnings',
        )
        .option('--json', 'print a JSON document')
        .addHelpText(
          'after',
          `
Exit codes: 0 the trust root is usable, 2 it is misconfigured (a bad pin, an unreadable or
malformed keys file, a plain-HTTP URL), 5 none is configured, 6 it is unavailable (retry).`,
        ),
    ),
    [
      'packwarden trust show   # the PACKWARDEN_* variables',
      'packwarden trust show --keys release.keys.json --json',
      'packwarden trust show --jwks https://example.com/.well-known/jwks.json --pin S9FC_5c2n3eZEAD1bQ_46jn24OADyXq0kITicUEUpgs',
    ],
  ).action(async (options: TrustFlags & { json?: boolean }) => {
    const { trustShow } = await import('./show.js');
    state.exitCode = await trustShow(io, options);
  });
}
