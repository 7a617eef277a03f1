import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanTemps, cli, tempDir } from './helpers.js';

afterEach(cleanTemps);

/** What bash's own completion machinery offers for `words` (the last one being completed). */
function bashComplete(script: string, words: string[]): string[] {
  const file = join(tempDir(), 'packwarden.bash');
  writeFileSync(file, script);
  const quoted = words.map((word) => `'${word}'`).join(' ');
  const result = spawnSync(
    'bash',
    [
      '--norc',
      '--noprofile',
      '-c',
      `source "$1"
spec=$(complete -p packwarden) || exit 3
[[ "$spec" == *"-F _packwarden"* ]] || exit 4
COMP_WORDS=(${quoted}); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 ))
COMP_LINE="\${COMP_WORDS[*]}"; COMP_POINT=\${#COMP_LINE}
_packwarden packwarden "\${COMP_WORDS[COMP_CWORD]}" "\${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\\n' "\${COMPREPLY[@]}"`,
      'complete-test',
      file,
    ],
    { encoding: 'utf8' },
  );
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.split('\n').filter(Boolean).sort();
}

describe('packwarden completion', () => {
  test('bash: commands, subcommands and options come from the command tree', async () => {
    const generated = await cli(['completion', 'bash']);
    expect(generated.code, generated.stderr).toBe(0);
    const script = generated.stdout;
    expect(bashComplete(script, ['packwarden', ''])).toEqual(
      expect.arrayContaining(['pack', 'store', 'trust', 'sandbox', 'run', 'env', 'completion']),
    );
    expect(bashComplete(script, ['packwarden', 'pa'])).toEqual(['pack']);
    expect(bashComplete(script, ['packwarden', 'pack', 'ver'])).toEqual(['verify']);
    expect(bashComplete(script, ['packwarden', 'pack', 'verify', './x', '--re'])).toEqual([
      '--require-signed',
    ]);
    expect(bashComplete(script, ['packwarden', 'store', '--json', 'in'])).toEqual([
      'info',
      'install',
    ]);
    // A word that is no command (a pack path) does not move the position in the tree.
    expect(bashComplete(script, ['packwarden', 'pack', 'sign', 'my-pack', '--k'])).toEqual([
      '--key',
      '--kid',
    ]);
    expect(bashComplete(script, ['packwarden', 'nonsense', ''])).toEqual(
      bashComplete(script, ['packwarden', '']),
    );
  });

  test('zsh and fish scripts are generated from the same tree; other shells are usage errors', async () => {
    const zsh = await cli(['completion', 'zsh']);
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toMatch(/^#compdef packwarden\n/);
    expect(zsh.stdout).toContain('bashcompinit');
    const fish = await cli(['completion', 'fish']);
    expect(fish.code).toBe(0);
    expect(fish.stdout).toContain(
      "complete -c packwarden -n 'test (__packwarden_path) = '\\''pack'\\'''",
    );
    expect(fish.stdout).toContain('--require-signed');
    const bad = await cli(['completion', 'powershell']);
    expect(bad.code).toBe(2);
  });
});
