#!/usr/bin/env node
// Every changeset that bumps a library the CLI bundles must bump the CLI (`packwarden`) too
// (issue 13 item 10). apps/cli's tsup build bundles the workspace libraries from their sources
// (apps/cli/tsup.config.ts), and they are only devDependencies of apps/cli, so changesets never
// bumps the CLI on its own: without this check a library fix would ship in no CLI release.
//
//   node scripts/check-changesets.mjs              # checks .changeset/*.md of this repository
//   node scripts/check-changesets.mjs --self-test  # checks the check on fixtures in a temp dir
//
// The bundled libraries are read from apps/cli/package.json (every `workspace:` dependency).
// Exit 1 and one line per offending changeset on failure; "changesets: ok (N checked)" otherwise.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI_DIR = 'apps/cli';

/** The package names a changeset's front matter bumps (`'name': patch` lines). */
export function bumpedPackages(text) {
  const match = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/.exec(text);
  if (match === null) throw new Error('no front matter');
  const names = [];
  for (const line of match[1].split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const entry = /^\s*(['"]?)([^'":]+)\1\s*:\s*(major|minor|patch|none)\s*$/.exec(line);
    if (entry === null) throw new Error(`unreadable front matter line: ${line}`);
    names.push(entry[2]);
  }
  return names;
}

/** Problems found under `root` (a repository: `.changeset/` and `apps/cli/package.json`). */
export function checkChangesets(root) {
  const cli = JSON.parse(readFileSync(join(root, CLI_DIR, 'package.json'), 'utf8'));
  const bundled = new Set(
    Object.entries({ ...cli.dependencies, ...cli.devDependencies })
      .filter(([, spec]) => String(spec).startsWith('workspace:'))
      .map(([name]) => name),
  );
  const dir = join(root, '.changeset');
  const files = readdirSync(dir).filter((name) => name.endsWith('.md') && name !== 'README.md');
  const problems = [];
  for (const file of files.sort()) {
    let names;
    try {
      names = bumpedPackages(readFileSync(join(dir, file), 'utf8'));
    } catch (error) {
      problems.push(`.changeset/${file}: ${error.message}`);
      continue;
    }
    const libraries = names.filter((name) => bundled.has(name));
    if (libraries.length > 0 && !names.includes(cli.name)) {
      problems.push(
        `.changeset/${file}: bumps ${libraries.join(', ')}, bundled into the CLI, without bumping ${cli.name}`,
      );
    }
  }
  return { checked: files.length, problems };
}

function selfTest() {
  const root = mkdtempSync(join(tmpdir(), 'check-changesets-'));
  try {
    mkdirSync(join(root, CLI_DIR), { recursive: true });
    mkdirSync(join(root, '.changeset'));
    writeFileSync(
      join(root, CLI_DIR, 'package.json'),
      JSON.stringify({
        name: 'packwarden',
        devDependencies: { '@packwarden/store-client': 'workspace:^', zod: '^4' },
      }),
    );
    const write = (name, body) => writeFileSync(join(root, '.changeset', name), body);
    write('README.md', 'not a changeset');
    write('good.md', "---\n'@packwarden/store-client': patch\n'packwarden': patch\n---\n\nx\n");
    write('unbundled.md', "---\n'zod-like-other': minor\n---\n\nx\n");
    let result = checkChangesets(root);
    if (result.problems.length !== 0 || result.checked !== 2) {
      throw new Error(`self-test: a good set failed: ${JSON.stringify(result)}`);
    }
    write('bad.md', '---\n"@packwarden/store-client": minor\n---\n\nx\n');
    write('broken.md', 'no front matter\n');
    result = checkChangesets(root);
    const expected = [
      '.changeset/bad.md: bumps @packwarden/store-client, bundled into the CLI, without bumping packwarden',
      '.changeset/broken.md: no front matter',
    ];
    if (JSON.stringify(result.problems) !== JSON.stringify(expected)) {
      throw new Error(
        `self-test: expected ${JSON.stringify(expected)}, got ${JSON.stringify(result.problems)}`,
      );
    }
    console.log('changesets self-test: passed');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--self-test')) {
    selfTest();
  } else {
    const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
    const { checked, problems } = checkChangesets(root);
    for (const problem of problems) console.error(problem);
    if (problems.length > 0) process.exit(1);
    console.log(`changesets: ok (${checked} checked)`);
  }
}
