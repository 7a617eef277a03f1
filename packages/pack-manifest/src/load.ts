import { join } from 'node:path';
import {
  Composer,
  isAlias,
  isCollection,
  isMap,
  isPair,
  isScalar,
  LineCounter,
  Parser,
  YAMLParseError,
  type CST,
  type Document,
  type DocumentOptions,
  type ParseOptions,
  type SchemaOptions,
  type Node,
} from 'yaml';
import type { core } from 'zod';
import { PackManifestError, type ManifestIssue } from './errors.js';
import {
  MANIFEST_MAX_COLLECTION_ENTRIES,
  MANIFEST_MAX_NESTING,
  MANIFEST_MAX_TOTAL_ENTRIES,
  measureCst,
  yamlNestingEstimate,
} from './nesting.js';
import { readBoundedFile } from './read-bounded-file.js';
import { AgentManifestSchema, MANIFEST_FILE, type AgentManifest } from './schema.js';

export interface ParseManifestOptions {
  /** Shown in messages. Default `agent.yaml`. */
  file?: string;
  /** Refuse larger manifest text (UTF-8 bytes). Default 256 KiB. */
  maxBytes?: number;
}

export type LoadManifestOptions = ParseManifestOptions;

export interface LoadedManifest {
  manifest: AgentManifest;
  /** Absolute path of the `agent.yaml` that was read. */
  file: string;
  /** The pack folder. */
  dir: string;
}

export const DEFAULT_MANIFEST_MAX_BYTES = 256 * 1024;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads and validates `<dir>/agent.yaml`. The file must be a regular file (a symlink could make
 * a pack read something outside itself) no larger than `maxBytes`, read by `readBoundedFile`.
 */
export function loadPackManifest(dir: string, options: LoadManifestOptions = {}): LoadedManifest {
  const file = join(dir, MANIFEST_FILE);
  const maxBytes = options.maxBytes ?? DEFAULT_MANIFEST_MAX_BYTES;
  const shown = options.file ?? file;
  const read = readBoundedFile(file, maxBytes);
  const notFound = (cause: unknown) =>
    new PackManifestError(
      'ERR_MANIFEST_NOT_FOUND',
      `no ${MANIFEST_FILE} in ${dir}: is this an Agent Pack folder?`,
      { file: shown, cause },
    );
  switch (read.kind) {
    case 'absent':
      throw notFound(read.cause);
    case 'symlink':
      throw new PackManifestError(
        'ERR_MANIFEST_NOT_REGULAR_FILE',
        `${shown} is a symlink; a pack's manifest must be a regular file`,
        { file: shown, cause: read.cause },
      );
    case 'not-regular-file':
      throw new PackManifestError(
        'ERR_MANIFEST_NOT_REGULAR_FILE',
        `${shown} is not a regular file`,
        { file: shown },
      );
    case 'too-large':
      throw new PackManifestError(
        'ERR_MANIFEST_TOO_LARGE',
        `${shown} is ${read.size} bytes; the limit is ${maxBytes}`,
        { file: shown },
      );
    case 'grew':
      throw new PackManifestError(
        'ERR_MANIFEST_TOO_LARGE',
        `${shown} grew while it was being read; the limit is ${maxBytes} bytes`,
        { file: shown },
      );
    case 'failed':
      // A path through a file (`pack/agent.yaml` where `pack` is a file) has no manifest either.
      if (read.step === 'open' && (read.cause as { code?: string }).code === 'ENOTDIR')
        throw notFound(read.cause);
      throw new PackManifestError(
        'ERR_MANIFEST_IO',
        `cannot read ${shown}: ${(read.cause as Error).message}`,
        { file: shown, cause: read.cause },
      );
    case 'read':
      break;
  }
  let text: string;
  try {
    text = utf8.decode(read.bytes);
  } catch (cause) {
    throw new PackManifestError('ERR_MANIFEST_YAML', `${shown} is not valid UTF-8`, {
      file: shown,
      cause,
    });
  }
  return { manifest: parsePackManifest(text, { file: shown, maxBytes }), file, dir };
}

/** Parses and validates manifest text (block or flow YAML, or JSON). */
export function parsePackManifest(text: string, options: ParseManifestOptions = {}): AgentManifest {
  const file = options.file ?? MANIFEST_FILE;
  const maxBytes = options.maxBytes ?? DEFAULT_MANIFEST_MAX_BYTES;
  if (typeof text !== 'string') {
    throw new PackManifestError('ERR_MANIFEST_YAML', `${file} is not text`, { file });
  }
  if (text.length > maxBytes || Buffer.byteLength(text, 'utf8') > maxBytes) {
    throw new PackManifestError(
      'ERR_MANIFEST_TOO_LARGE',
      `${file} is larger than ${maxBytes} bytes`,
      { file },
    );
  }
  const source = text.replace(/^\uFEFF/, '');
  // Nesting is bounded before the library composes anything: see nesting.ts for why.
  if (yamlNestingEstimate(source) > MANIFEST_MAX_NESTING) throw tooDeep(file);
  const lineCounter = new LineCounter();
  const tokens = [...new Parser(lineCounter.addNewLine).parse(source)];
  const shape = measureCst(tokens);
  if (shape.depth > MANIFEST_MAX_NESTING) throw tooDeep(file);
  if (shape.widest > MANIFEST_MAX_COLLECTION_ENTRIES || shape.total > MANIFEST_MAX_TOTAL_ENTRIES) {
    const what =
      shape.widest > MANIFEST_MAX_COLLECTION_ENTRIES
        ? `a mapping or list of more than ${MANIFEST_MAX_COLLECTION_ENTRIES} entries`
        : `more than ${MANIFEST_MAX_TOTAL_ENTRIES} entries in all`;
    throw new PackManifestError(
      'ERR_MANIFEST_TOO_MANY_ENTRIES',
      `${file} has ${what}; it is refused before it is parsed`,
      { file, issues: [{ field: '', message: what }] },
    );
  }
  const doc = composeOne(tokens, source.length);
  const at = (offset: number | undefined) => {
    if (offset === undefined) return {};
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  // Warnings too (an unresolved tag such as !!js/function): a manifest that needs
  // interpretation is refused rather than guessed at.
  const problems = [...doc.errors, ...doc.warnings];
  if (problems.length > 0) {
    const issues: ManifestIssue[] = problems.map((error) => ({
      field: '',
      message: error.message.split('\n')[0]!,
      ...at(error.pos[0]),
    }));
    throw new PackManifestError(
      'ERR_MANIFEST_YAML',
      `${file} is not valid YAML: ${issues[0]!.message}`,
      { file, issues },
    );
  }
  const keyIssue = versionProblem(doc, source) ?? findNodeProblem(doc);
  if (keyIssue !== undefined) {
    const issue = { field: '', message: keyIssue.message, ...at(keyIssue.offset) };
    throw new PackManifestError(
      'ERR_MANIFEST_YAML',
      `${file} is not valid YAML: ${issue.message}`,
      {
        file,
        issues: [issue],
      },
    );
  }
  let data: unknown;
  try {
    // Aliases are the one way a small YAML file expands into a huge object ("billion laughs").
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (cause) {
    throw new PackManifestError('ERR_MANIFEST_YAML', `${file}: ${(cause as Error).message}`, {
      file,
      cause,
    });
  }
  const dataIssue = jsonDataProblem(data);
  if (dataIssue !== undefined) {
    throw new PackManifestError('ERR_MANIFEST_YAML', `${file} is not valid YAML: ${dataIssue}`, {
      file,
      issues: [{ field: '', message: dataIssue }],
    });
  }
  const result = AgentManifestSchema.safeParse(data);
  if (result.success) return result.data;
  const issues = result.error.issues.flatMap((issue) => describeIssue(issue, doc, at));
  throw new PackManifestError(
    'ERR_MANIFEST_INVALID',
    `${file} does not follow the Agent Pack Specification v1:\n${issues
      .map(
        (issue) =>
          `  ${issue.line === undefined ? '' : `line ${issue.line}: `}${issue.field || '(document)'}: ${issue.message}`,
      )
      .join('\n')}`,
    { file, issues },
  );
}

const COMPOSE_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  prettyErrors: false,
  uniqueKeys: true,
  strict: true,
  version: '1.2',
  schema: 'core',
  customTags: [],
};

/** What `parseDocument` does, on tokens whose nesting was already checked. */
function composeOne(tokens: CST.Token[], length: number): Document {
  let doc: Document | undefined;
  for (const next of new Composer(COMPOSE_OPTIONS).compose(tokens, true, length)) {
    if (doc === undefined) {
      doc = next;
      continue;
    }
    doc.errors.push(
      new YAMLParseError(
        [next.range[0], next.range[1]],
        'MULTIPLE_DOCS',
        'Source contains multiple documents; an agent.yaml holds one',
      ),
    );
    break;
  }
  // compose(…, forceDoc = true) always yields a document, even for empty text.
  return doc!;
}

function tooDeep(file: string): PackManifestError {
  return new PackManifestError(
    'ERR_MANIFEST_TOO_DEEP',
    `${file} nests collections more than ${MANIFEST_MAX_NESTING} levels deep; it is refused before it is parsed`,
    {
      file,
      issues: [{ field: '', message: `nested more than ${MANIFEST_MAX_NESTING} levels deep` }],
    },
  );
}

/**
 * A `%YAML` directive naming another version than 1.2. The library reads a `%YAML 1.1` document
 * with the schema it is given (core, YAML 1.2), so `off`, `0777` and `0b1` were the string "off",
 * 777 and the string "0b1" here, and false, 511 and 1 to every reader that honours the directive:
 * one signed file, two manifests.
 */
function versionProblem(
  doc: Document,
  source: string,
): { message: string; offset?: number } | undefined {
  const declared = doc.directives?.yaml;
  if (declared === undefined || !declared.explicit || declared.version === '1.2') return undefined;
  const offset = /^%YAML[ \t]/m.exec(source)?.index;
  return {
    message: `a %YAML ${declared.version} directive is not allowed: agent.yaml is read as YAML 1.2 (remove the directive, or write %YAML 1.2)`,
    ...(offset === undefined ? {} : { offset }),
  };
}

// The tags of the YAML 1.2 core schema, and `!` (a quoted scalar's non-specific tag). The library
// also resolves YAML 1.1 tags written out (`!!binary`, `!!set`, `!!omap`, `!!timestamp`,
// `!!merge`) even under the core schema: they turn a manifest into Buffers, Sets, Maps and Dates
// that every JSON consumer (`pack info --json`, engines) reads differently, and `!!merge <<: *a`
// adds keys (`spec.engine`) that a YAML 1.2 reader does not see.
const CORE_TAGS = new Set(
  ['str', 'int', 'float', 'bool', 'null', 'map', 'seq'].map((name) => `tag:yaml.org,2002:${name}`),
);
CORE_TAGS.add('!');

function tagProblem(node: unknown): { message: string; offset?: number } | undefined {
  const { tag, range } = (node ?? {}) as { tag?: unknown; range?: [number, ...number[]] };
  if (tag === undefined || (typeof tag === 'string' && CORE_TAGS.has(tag))) return undefined;
  const shown = String(tag)
    .replace(/^tag:yaml\.org,2002:/, '!!')
    .slice(0, 60);
  return {
    message: `the tag ${JSON.stringify(shown)} is not part of the YAML 1.2 core schema`,
    ...(range === undefined ? {} : { offset: range[0] }),
  };
}

/**
 * Keys must be scalars, and distinct once turned into the strings a JS object has: the library
 * would stringify a collection key (with a process warning) and `1` and `"1"` would become the
 * same key, slipping past the duplicate-key check. A `<<` key is a merge key to YAML 1.1 readers
 * and a plain key to YAML 1.2 ones: the same file would mean two manifests. Every node's tag must
 * be a core schema tag.
 */
function findNodeProblem(doc: Document): { message: string; offset?: number } | undefined {
  const stack: unknown[] = [doc.contents];
  while (stack.length > 0) {
    const node = stack.pop();
    const badTag = tagProblem(node);
    if (badTag !== undefined) return badTag;
    if (isAlias(node) || !isCollection(node)) continue;
    const seen = new Set<string>();
    for (const item of node.items) {
      if (!isPair(item)) {
        stack.push(item);
        continue;
      }
      const { key, value } = item;
      if (key !== null && !isScalar(key)) {
        const offset = (key as Node).range?.[0];
        return {
          message: isAlias(key)
            ? 'an alias used as a mapping key is not allowed'
            : 'a collection used as a mapping key is not allowed (keys must be plain values)',
          ...(offset === undefined ? {} : { offset }),
        };
      }
      const badKeyTag = tagProblem(key);
      if (badKeyTag !== undefined) return badKeyTag;
      if (isMap(node)) {
        const raw = key === null ? null : key.value;
        const name = raw === null || raw === undefined ? '' : String(raw);
        if (name === '<<') {
          const offset = key?.range?.[0];
          return {
            message:
              'a "<<" key is not allowed: YAML 1.1 readers merge it into the mapping, YAML 1.2 readers do not',
            ...(offset === undefined ? {} : { offset }),
          };
        }
        if (seen.has(name)) {
          const offset = key?.range?.[0];
          return {
            message: `duplicate key ${JSON.stringify(name.slice(0, 40))} (keys that read the same as text are the same key)`,
            ...(offset === undefined ? {} : { offset }),
          };
        }
        seen.add(name);
      }
      stack.push(value);
    }
  }
  return undefined;
}

/**
 * Why `data` (what the library built) is not a tree of JSON values, or undefined when it is. The
 * manifest reaches JSON consumers (`pack info --json`, engines, store indexes): an alias inside
 * its own anchor (`a: &a [*a]`) made a cycle that `JSON.stringify` throws on, and `.nan` / `.inf`
 * become `null` there. Shared (aliased) values are fine and are checked once.
 */
function jsonDataProblem(data: unknown): string | undefined {
  const onPath = new Set<object>();
  const checked = new Set<object>();
  const stack: Array<{ value: unknown; leave?: object }> = [{ value: data }];
  while (stack.length > 0) {
    const { value, leave } = stack.pop()!;
    if (leave !== undefined) {
      onPath.delete(leave);
      checked.add(leave);
      continue;
    }
    if (value === null || typeof value === 'string' || typeof value === 'boolean') continue;
    if (typeof value === 'number') {
      if (Number.isFinite(value)) continue;
      return `${String(value)} (.nan, .inf) is not a JSON number`;
    }
    if (typeof value !== 'object') return `a ${typeof value} value is not JSON data`;
    if (onPath.has(value)) return 'an alias refers to a collection that contains it';
    if (checked.has(value)) continue;
    const proto: unknown = Object.getPrototypeOf(value);
    const isArray = Array.isArray(value) && proto === Array.prototype;
    if (!isArray && proto !== Object.prototype && proto !== null) {
      return 'a value that is not a string, number, boolean, null, list or mapping';
    }
    onPath.add(value);
    stack.push({ value: undefined, leave: value });
    for (const child of Object.values(value)) stack.push({ value: child });
  }
  return undefined;
}

type PositionOf = (offset: number | undefined) => { line?: number; column?: number };

function describeIssue(issue: core.$ZodIssue, doc: Document, at: PositionOf): ManifestIssue[] {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({
      field: [...path, key].join('.'),
      message: `unknown field "${key}" (allowed at the top level: apiVersion, kind, metadata, spec)`,
      ...at(keyOffset(doc, path, key)),
    }));
  }
  const node = nodeAt(doc, path);
  let message = issue.message;
  if (issue.code === 'invalid_type' && node === undefined) message = 'is required';
  const offset = node?.range?.[0] ?? nearestOffset(doc, path);
  return [{ field: path.join('.'), message, ...at(offset) }];
}

function nodeAt(doc: Document, path: string[]): Node | undefined {
  if (path.length === 0) return (doc.contents as Node | null) ?? undefined;
  const node = doc.getIn(path, true) as unknown;
  return node && typeof node === 'object' && 'range' in node ? (node as Node) : undefined;
}

/** Where the closest existing ancestor of a missing field is. */
function nearestOffset(doc: Document, path: string[]): number | undefined {
  for (let i = path.length - 1; i >= 0; i--) {
    const offset = keyOffset(doc, path.slice(0, i), path[i]!);
    if (offset !== undefined) return offset;
  }
  return (doc.contents as Node | null)?.range?.[0];
}

function keyOffset(doc: Document, parentPath: string[], key: string): number | undefined {
  const parent = nodeAt(doc, parentPath);
  if (!isMap(parent)) return undefined;
  for (const pair of parent.items) {
    if (isPair(pair) && isScalar(pair.key) && String(pair.key.value) === key)
      return pair.key.range?.[0];
  }
  return undefined;
}
