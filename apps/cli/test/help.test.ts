import { readFileSync } from 'node:fs';
import { CommanderError, type Command } from 'commander';
import { describe, expect, test } from 'vitest';
import { createProgram, type CliIo } from 'packwarden';
import { cli } from './helpers.js';

// Issue 13 item 4: "help with examples and required options marked". Every command a user can
// run ends its help with examples, and each example is parsed by the real program, so a renamed
// flag, a dropped argument or a new required option breaks this test, not a user's copy-paste.

interface Captured {
  io: CliIo;
  stdout: () => string;
  stderr: () => string;
}

function captured(): Captured {
  let stdout = '';
  let stderr = '';
  return {
    io: {
      stdout: { write: (chunk: string) => (stdout += chunk) },
      stderr: { write: (chunk: string) => (stderr += chunk) },
      env: { HOME: '/nonexistent-home' },
      cwd: '/nonexistent-cwd',
    },
    stdout: () => stdout,
    stderr: () => stderr,
  };
}

/** Every command of the tree with its path below `packwarden` (`[]` for the root). */
function commandTree(root: Command): { command: Command; path: string[] }[] {
  const found: { command: Command; path: string[] }[] = [];
  const visit = (command: Command, path: string[]) => {
    found.push({ command, path });
    for (const sub of command.commands) visit(sub, [...path, sub.name()]);
  };
  visit(root, []);
  return found;
}

class ReachedAction extends Error {
  constructor(readonly path: string[]) {
    super(`reached the action of "${path.join(' ')}"`);
  }
}

function commandPath(command: Command): string[] {
  const path: string[] = [];
  for (let at: Command | null = command; at?.parent; at = at.parent) path.unshift(at.name());
  return path;
}

/**
 * Parses `argv` with the real program and stops right before the action would run (commander's
 * `preAction` hook runs after every argument and option check): the command it reached, or the
 * usage error commander raised, with what it printed.
 */
async function parseOnly(argv: readonly string[]) {
  const output = captured();
  const program = createProgram(output.io, { exitCode: 0 });
  program.hook('preAction', (_root, actionCommand) => {
    throw new ReachedAction(commandPath(actionCommand));
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return { reached: undefined, error: undefined, stderr: output.stderr() };
  } catch (error) {
    if (error instanceof ReachedAction)
      return { reached: error.path, error: undefined, stderr: output.stderr() };
    if (error instanceof CommanderError)
      return { reached: undefined, error: error.code, stderr: output.stderr() };
    throw error;
  }
}

type Token = { word: string } | { operator: string };

/** Enough of shell word splitting for the examples: quotes, redirections, pipes, comments. */
function shellTokens(line: string): Token[] {
  const tokens: Token[] = [];
  let word: string | undefined;
  const endWord = () => {
    if (word !== undefined) tokens.push({ word });
    word = undefined;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'" || c === '"') {
      const close = line.indexOf(c, i + 1);
      if (close < 0) throw new Error(`unclosed quote in: ${line}`);
      word = (word ?? '') + line.slice(i + 1, close);
      i = close;
    } else if (/\s/.test(c)) {
      endWord();
    } else if ('|&;<>()'.includes(c) || (c === '#' && word === undefined)) {
      endWord();
      tokens.push({ operator: c });
      if (c === '#') break;
    } else {
      word = (word ?? '') + c;
    }
  }
  endWord();
  return tokens;
}

/** The arguments after `packwarden` in an example line, up to the first shell operator. */
function invocation(line: string): string[] {
  const tokens = shellTokens(line);
  const start = tokens.findIndex((token) => 'word' in token && token.word === 'packwarden');
  if (start < 0) throw new Error(`no packwarden invocation in: ${line}`);
  const argv: string[] = [];
  for (const token of tokens.slice(start + 1)) {
    if (!('word' in token)) break;
    argv.push(token.word);
  }
  return argv;
}

/** The example lines that close a help text; throws when anything else follows them. */
function closingExamples(help: string): string[] {
  const sections = help.split('\nExamples:\n');
  if (sections.length !== 2) throw new Error(`${sections.length - 1} "Examples:" sections`);
  const lines = sections[1]!.replace(/\n$/, '').split('\n');
  for (const line of lines)
    if (!/^ {2}\S/.test(line)) throw new Error(`not an example line after "Examples:": ${line}`);
  return lines.map((line) => line.slice(2));
}

async function helpOf(path: string[]): Promise<string> {
  const result = await cli([...path, '--help']);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toBe('');
  return result.stdout;
}

const tree = commandTree(createProgram(captured().io, { exitCode: 0 }));

/** A command a user runs: a leaf, or a command with subcommands and an action of its own. */
async function runnable(command: Command, path: string[]): Promise<boolean> {
  if (command.commands.length === 0) return true;
  return (await parseOnly(path)).reached !== undefined;
}

const runnablePaths: string[][] = [];
for (const { command, path } of tree) if (await runnable(command, path)) runnablePaths.push(path);

describe('the checks below can fail', () => {
  test('parseOnly sees usage errors: a renamed flag, a missing required option or argument', async () => {
    expect(await parseOnly(['pack', 'verify', './my-pack', '--key-file', 'k.json'])).toMatchObject({
      reached: undefined,
      error: 'commander.unknownOption',
    });
    const missingKid = await parseOnly(['pack', 'sign', './my-pack', '--key', 'release.pem']);
    expect(missingKid.error).toBe('commander.missingMandatoryOptionValue');
    expect(missingKid.stderr).toContain("required option '--kid <kid>' not specified");
    expect((await parseOnly(['store', 'build', '--out', 'x'])).error).toBe(
      'commander.missingArgument',
    );
    expect((await parseOnly(['completion', 'tcsh'])).error).toBe('commander.invalidArgument');
    expect(await parseOnly(['pack', 'digest', './my-pack'])).toMatchObject({
      reached: ['pack', 'digest'],
      stderr: '',
    });
  });

  test('a group is not runnable, sandbox (an action and a subcommand) is', async () => {
    expect(runnablePaths).toContainEqual(['sandbox']);
    expect(runnablePaths).toContainEqual(['sandbox', 'doctor']);
    expect(runnablePaths).not.toContainEqual(['pack']);
    expect(runnablePaths).not.toContainEqual([]);
  });

  test('closingExamples refuses text after the examples, and finds the invocation in shell', () => {
    expect(() =>
      closingExamples('Usage: x\n\nExamples:\n  packwarden env\n\nExit codes: 0'),
    ).toThrow(/not an example line/);
    expect(() => closingExamples('Usage: x\n')).toThrow(/0 "Examples:" sections/);
    expect(invocation(`source <(packwarden completion bash)   # bash`)).toEqual([
      'completion',
      'bash',
    ]);
    expect(invocation(`PACKWARDEN_HOME=/srv/packwarden packwarden env --json | jq .`)).toEqual([
      'env',
      '--json',
    ]);
    expect(invocation(`packwarden run ./p 'two words' --json > out.ndjson`)).toEqual([
      'run',
      './p',
      'two words',
      '--json',
    ]);
  });
});

describe('every command a user runs ends its help with examples that parse', () => {
  test('the tree has the commands of apps/cli/README.md', () => {
    expect(runnablePaths.map((path) => path.join(' ')).sort()).toEqual(
      [
        'completion',
        'engine sign',
        'engine verify',
        'env',
        'pack digest',
        'pack export',
        'pack info',
        'pack install',
        'pack keygen',
        'pack list',
        'pack schema',
        'pack sign',
        'pack validate',
        'pack verify',
        'run',
        'sandbox',
        'sandbox doctor',
        'store build',
        'store info',
        'store install',
        'store list',
        'store push',
        'store search',
        'trust show',
      ].sort(),
    );
  });

  test.each(runnablePaths.map((path) => [path.join(' '), path] as const))(
    '%s',
    async (_name, path) => {
      const examples = closingExamples(await helpOf(path));
      expect(examples.length).toBeGreaterThanOrEqual(1);
      expect(examples.length).toBeLessThanOrEqual(3);
      for (const example of examples) {
        const parsed = await parseOnly(invocation(example));
        expect(parsed.error, `${example}\n${parsed.stderr}`).toBeUndefined();
        expect(parsed.reached, example).toEqual(path);
      }
    },
  );

  test("the root's examples (a whole workflow) parse too", async () => {
    const examples = closingExamples(await helpOf([]));
    expect(examples.length).toBeGreaterThan(0);
    for (const example of examples) {
      const parsed = await parseOnly(invocation(example));
      expect(parsed.error, `${example}\n${parsed.stderr}`).toBeUndefined();
      expect(parsed.reached?.[0], example).toBe('pack');
    }
  });
});

describe('apps/cli/README.md (the npm page)', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const commandLines = [...readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm)]
    .flatMap((block) => block[1]!.split('\n'))
    .filter((line) => line.startsWith('packwarden '));

  test('every command line it shows parses: those commands exist with those flags', async () => {
    expect(commandLines.length).toBeGreaterThan(15);
    for (const line of commandLines) {
      const parsed = await parseOnly(invocation(line));
      expect(parsed.error, `${line}\n${parsed.stderr}`).toBeUndefined();
      expect(parsed.reached, line).toBeDefined();
    }
  });

  test('its command table names every command a user runs', () => {
    const table = readme.slice(readme.indexOf('## Commands'), readme.indexOf('## Trust root'));
    for (const path of runnablePaths)
      expect(table, path.join(' ')).toMatch(new RegExp(`\\| \`${path.join(' ')}[ \`]`));
  });
});

describe('the command tree', () => {
  test('every command has a description, and no two share one', () => {
    const descriptions = tree.map(({ command, path }) => {
      expect(command.description().trim(), path.join(' ')).not.toBe('');
      return command.description();
    });
    expect(descriptions.length).toBeGreaterThan(25);
    expect(new Set(descriptions).size).toBe(descriptions.length);
  });

  test('required options say so in the usage line and the option list; arguments keep <> and []', async () => {
    let mandatory = 0;
    for (const { command, path } of tree) {
      const help = await helpOf(path);
      const usage = help.split('\n')[0]!;
      for (const option of command.options.filter((option) => option.mandatory)) {
        mandatory++;
        const flags = option.flags.replace(/^-\w, /, '');
        expect(usage, path.join(' ')).toContain(` ${flags} `);
        expect(help).toMatch(new RegExp(`\\n  ${option.flags}\\s+\\(required\\) `));
      }
      for (const option of command.options.filter((option) => !option.mandatory))
        expect(help).not.toMatch(new RegExp(`\\n  ${option.flags}\\s+\\(required\\) `));
      for (const argument of command.registeredArguments) {
        const name = `${argument.name()}${argument.variadic ? '...' : ''}`;
        const shown = argument.required ? `<${name}>` : `[${name}]`;
        expect(help, path.join(' ')).toContain(`\nArguments:\n`);
        expect(help, path.join(' ')).toMatch(
          new RegExp(`\\n  ${shown.replace(/[.[\]]/g, '\\$&')} `),
        );
      }
    }
    // pack sign and engine sign (--key, --kid), pack install (--to), store build (--out).
    expect(mandatory).toBe(6);
  });

  test('a missing required option is a usage error: exit 2, CLI wording, ERR_CLI_USAGE in JSON', async () => {
    const result = await cli(['pack', 'install', 'code-reviewer', '--json']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("error: required option '--to <dir>' not specified");
    expect(result.stderr).toContain('Usage: packwarden pack install [options] --to <dir> <slug>');
    expect(JSON.parse(result.stdout)).toEqual({
      schemaVersion: 1,
      error: {
        code: 'ERR_CLI_USAGE',
        message: "required option '--to <dir>' not specified",
        hint: 'run the command with --help',
      },
      exitCode: 2,
    });
  });
});
