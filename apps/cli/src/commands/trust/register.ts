import type { Command } from 'commander';
import type { CommandContext } from '../../context.js';
import { addTrustRootOptions, type TrustFlags } from '../../shared/trust.js';

/** `packwarden trust …`. */
export function registerTrustCommands(program: Command, { io, state }: CommandContext): void {
  const trust = program
    .command('trust')
    .description('Inspect the trust root that verification uses');
  addTrustRootOptions(
    trust
      .command('show')
      .description(
        'Which source is configured, its status, keys (kid, thumbprint, validity), staleness and warnings',
      )
      .option('--json', 'print a JSON document'),
  ).action(async (options: TrustFlags & { json?: boolean }) => {
    const { trustShow } = await import('./show.js');
    state.exitCode = await trustShow(io, options);
  });
}
