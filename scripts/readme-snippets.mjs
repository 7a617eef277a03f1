#!/usr/bin/env node
// The TypeScript blocks of the READMEs, typechecked as a consumer would paste them (issue 13 item 1).
//
//   node scripts/readme-snippets.mjs --list            # every ```ts block and whether it is checked
//   node scripts/readme-snippets.mjs --project DIR     # typecheck them in a consumer project
//                                                      # (`node scripts/consumer-check.mjs --keep`
//                                                      # leaves one; the consumer check runs this too)
//
// Documents read: README.md, apps/cli/README.md, packages/*/README.md, docs/*.md. A block is a
// fence opened by ```ts or ```typescript. Each becomes its own module (a trailing `export {}`), so
// top-level await works and blocks do not see each other's names. A block opts out only with
// `<!-- not-typechecked: <reason> -->` on the last non-blank line before its fence; the reason is
// required and `--list` prints it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const OPEN_FENCE = /^(\s*)(`{3,}|~{3,})\s*(ts|typescript)(\s.*)?$/;
const OPT_OUT = /^<!--\s*not-typechecked:\s*(\S.*?)\s*-->$/;

/** The Markdown files whose TypeScript blocks are checked, relative to the repository root. */
export function snippetDocuments(repoRoot) {
  const documents = ['README.md', 'apps/cli/README.md'];
  for (const name of readdirSync(join(repoRoot, 'packages')).sort()) {
    if (existsSync(join(repoRoot, 'packages', name, 'README.md')))
      documents.push(`packages/${name}/README.md`);
  }
  if (existsSync(join(repoRoot, 'docs'))) {
    for (const name of readdirSync(join(repoRoot, 'docs')).sort()) {
      if (name.endsWith('.md')) documents.push(`docs/${name}`);
    }
  }
  return documents.filter((document) => existsSync(join(repoRoot, document)));
}

/**
 * Every ```ts block of one Markdown text: `{ line, code, skipReason? }`, `line` being the 1-based
 * line of the first code line. An unclosed fence is an error (the rest of the file would vanish).
 */
export function extractBlocks(text, document = 'document') {
  const lines = text.split(/\r?\n/);
  const blocks = [];
  for (let index = 0; index < lines.length; index++) {
    const open = OPEN_FENCE.exec(lines[index]);
    if (!open) {
      // Skip over other fenced blocks so a ```ts inside a ```md example is not taken for code.
      const other = /^(\s*)(`{3,}|~{3,})/.exec(lines[index]);
      if (other) {
        const close = new RegExp(`^\\s*${other[2][0]}{${other[2].length},}\\s*$`);
        index++;
        while (index < lines.length && !close.test(lines[index])) index++;
      }
      continue;
    }
    const [, indent, fence] = open;
    const close = new RegExp(`^\\s*${fence[0]}{${fence.length},}\\s*$`);
    let previous = index - 1;
    while (previous >= 0 && lines[previous].trim() === '') previous--;
    const optOut = previous >= 0 ? OPT_OUT.exec(lines[previous].trim()) : null;
    const start = index + 1;
    let end = start;
    while (end < lines.length && !close.test(lines[end])) end++;
    if (end >= lines.length) throw new Error(`${document}:${index + 1}: unclosed code fence`);
    const code = lines
      .slice(start, end)
      .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
      .join('\n');
    blocks.push({ line: start + 1, code, ...(optOut ? { skipReason: optOut[1] } : {}) });
    index = end;
  }
  return blocks;
}

/** Every block of every document: `{ document, line, code, skipReason?, file }`. */
export function collectSnippets(repoRoot) {
  return snippetDocuments(repoRoot).flatMap((document) =>
    extractBlocks(readFileSync(join(repoRoot, document), 'utf8'), document).map((block) => ({
      document,
      ...block,
      file: `${document.replace(/\.md$/i, '').replace(/[^A-Za-z0-9]+/g, '-')}-L${block.line}.ts`,
    })),
  );
}

/**
 * Writes each checked block to `<dir>/<file>` (the code, then `export {}` so it is a module) and
 * returns the list of checked blocks. The directory is emptied first.
 */
export function writeSnippets(repoRoot, dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const checked = collectSnippets(repoRoot).filter((snippet) => snippet.skipReason === undefined);
  for (const snippet of checked) {
    writeFileSync(join(dir, snippet.file), `${snippet.code}\nexport {};\n`);
  }
  return checked;
}

/** Rewrites a tsc diagnostic on `snippets/<file>(l,c)` to the README's own line and column. */
export function snippetLocation(diagnostic, snippets) {
  const match = /^snippets\/([^(]+)\((\d+),(\d+)\)(.*)$/.exec(diagnostic);
  if (!match) return diagnostic;
  const snippet = snippets.find((candidate) => candidate.file === match[1]);
  if (!snippet) return diagnostic;
  return `${snippet.document}:${snippet.line + Number(match[2]) - 1}:${match[3]}${match[4]}`;
}

function main(argv) {
  const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  if (argv[0] === '--list' && argv.length === 1) {
    for (const snippet of collectSnippets(repoRoot)) {
      const status =
        snippet.skipReason === undefined ? 'checked' : `not checked: ${snippet.skipReason}`;
      console.log(`${snippet.document}:${snippet.line}  ${status}`);
    }
    return 0;
  }
  if (argv[0] === '--project' && argv.length === 2) {
    const project = resolve(argv[1]);
    if (!existsSync(join(project, 'tsconfig.json')) || !existsSync(join(project, 'node_modules'))) {
      console.error(
        `${project} is not a consumer project (keep one with: node scripts/consumer-check.mjs --keep)`,
      );
      return 2;
    }
    const snippets = writeSnippets(repoRoot, join(project, 'snippets'));
    const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    try {
      execFileSync(process.execPath, [tsc, '-p', project, '--pretty', 'false'], {
        cwd: project,
        stdio: 'pipe',
      });
      console.log(`readme snippets: passed (${snippets.length} blocks)`);
      return 0;
    } catch (error) {
      const lines = `${error.stdout ?? ''}`.split('\n').filter(Boolean);
      for (const line of lines) console.error(snippetLocation(line, snippets));
      console.log(`readme snippets: FAILED (${lines.length} diagnostic lines, project ${project})`);
      return 1;
    }
  }
  console.error('usage: node scripts/readme-snippets.mjs --list | --project DIR');
  return 2;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
