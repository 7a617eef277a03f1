import { classifyTrustRoot, describeTrustRoot, type PackTrustRoot } from '@packwarden/trust-root';
import { EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import { loadTrustRootFromFlags, type TrustFlags } from '../../shared/trust.js';

/**
 * 0 ok, 5 none configured, 6 unavailable (retry), and 2 when the root is unavailable because of
 * its own configuration (a bad pin, an unreadable keys file, a plain-HTTP URL): the exit code
 * every command that checks signatures gives for it (`loadTrustRootOrExit`), never "retry".
 */
function exitCodeOf(root: PackTrustRoot): number {
  if (root.status === 'ok') return EXIT.ok;
  if (root.status === 'none') return 5;
  return classifyTrustRoot(root) === 'config' ? EXIT.usage : 6;
}

export async function trustShow(
  io: CliIo,
  flags: TrustFlags & { json?: boolean },
): Promise<number> {
  const root = await loadTrustRootFromFlags(io, flags);
  const description = describeTrustRoot(root);
  if (flags.json) {
    printJson(io, { trustRoot: description });
    return exitCodeOf(root);
  }
  // Key ids, reasons and warnings come from keys files and key servers: shown, never obeyed.
  const lines = [
    `source:  ${description.source.kind}`,
    `status:  ${description.status}${description.stale ? ' (stale cached copy)' : ''}`,
  ];
  if (description.reason) lines.push(`reason:  ${safe(description.reason)}`);
  if (description.fetchedAt) lines.push(`fetched: ${description.fetchedAt}`);
  lines.push(`keys:    ${description.keys.length}`);
  for (const key of description.keys) {
    const window = [
      key.notBefore ? `from ${key.notBefore}` : '',
      key.notAfter ? `until ${key.notAfter}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    lines.push(
      `  ${safe(key.kid)}  ${safe(key.thumbprint)}${window ? `  ${safe(window)}` : ''}${key.revoked ? '  REVOKED' : ''}`,
    );
  }
  for (const rejected of description.rejectedKeys)
    lines.push(`  rejected ${safe(rejected.kid ?? '(no kid)')}: ${safe(rejected.message)}`);
  for (const warning of description.warnings) lines.push(`warning: ${safe(warning)}`);
  io.stdout.write(`${lines.join('\n')}\n`);
  return exitCodeOf(root);
}
