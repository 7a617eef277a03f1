// Why a hand-written scanner runs before the `yaml` library: the library composes nested
// collections recursively, so a 2 KB `agent.yaml` nested 1,000 levels deep overflows the stack,
// and after one overflow V8 can abort the whole process on the next parse, which no `try`
// catches. The recursive part of the library must never see such text.
//
// Two gates, and the deeper input only has to fail one of them:
// 1. `yamlNestingEstimate`, a linear scan of the text before any library code runs. It errs
//    towards counting too much (each indentation step counts twice, each flow bracket twice),
//    and counts every style of nesting a real manifest or an attack uses: flow brackets, compact
//    `- - -` / `? ? ?` indicators, indentation.
// 2. `measureCst`, the exact depth of the library's concrete syntax tree. The library's lexer
//    and CST parser are iterative (only composing recurses), so this closes the gap for text
//    whose quoting or plain-scalar continuation the scanner reads differently from the library.
//    It also bounds the entries of each collection, since composing is quadratic in them.

/** The deepest nesting of collections an `agent.yaml` may have, as estimated by the scanner. */
export const MANIFEST_MAX_NESTING = 64;

/**
 * Most entries one mapping or sequence of an `agent.yaml` may hold. The library checks for
 * duplicate keys by comparing each key with every earlier one, so a 256 KiB mapping of 20,000
 * keys takes tens of seconds to compose; 1,000 entries compose in milliseconds, and the
 * specification allows no list longer than that (`skills`, `prompts.rules`).
 */
export const MANIFEST_MAX_COLLECTION_ENTRIES = 1000;

/** Most entries of all collections together: composing and validating stay well under a second. */
export const MANIFEST_MAX_TOTAL_ENTRIES = 10_000;

export interface CstMeasure {
  /** Deepest nesting of collections. */
  depth: number;
  /** Most entries in one collection. */
  widest: number;
  /** Entries of all collections together. */
  total: number;
}

/**
 * The exact collection nesting and widest collection of the `yaml` library's concrete syntax tree
 * and the entries of its collections (`Parser` tokens), walked with an explicit stack. Stops as
 * soon as one passes its limit.
 */
export function measureCst(
  tokens: readonly unknown[],
  limits: { depth: number; entries: number; total: number } = {
    depth: MANIFEST_MAX_NESTING,
    entries: MANIFEST_MAX_COLLECTION_ENTRIES,
    total: MANIFEST_MAX_TOTAL_ENTRIES,
  },
): CstMeasure {
  const measure: CstMeasure = { depth: 0, widest: 0, total: 0 };
  const stack: { node: unknown; depth: number }[] = tokens.map((node) => ({ node, depth: 0 }));
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    const token = node as { type?: unknown; items?: unknown; value?: unknown };
    const isCollection =
      token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection';
    const here = isCollection ? depth + 1 : depth;
    if (here > measure.depth) measure.depth = here;
    if (isCollection && Array.isArray(token.items)) {
      measure.widest = Math.max(measure.widest, token.items.length);
      measure.total += token.items.length;
    }
    if (
      measure.depth > limits.depth ||
      measure.widest > limits.entries ||
      measure.total > limits.total
    ) {
      return measure;
    }
    if (token.value !== undefined) stack.push({ node: token.value, depth: here });
    if (Array.isArray(token.items)) {
      for (const item of token.items as { key?: unknown; value?: unknown }[]) {
        if (item.key !== undefined) stack.push({ node: item.key, depth: here });
        if (item.value !== undefined) stack.push({ node: item.value, depth: here });
      }
    }
  }
  return measure;
}

interface BlockScalar {
  /** Lines indented less than this (once known) end the scalar. */
  contentIndent: number | undefined;
  /** The largest indentation the parent node can have: the scalar's content is deeper. */
  parentIndent: number;
  /** Longest all-space line seen before the first content line. */
  blankIndent: number;
  explicit: number | undefined;
}

const BLOCK_SCALAR_HEADER = /^[|>](?:[1-9][+-]?|[+-][1-9]?)?(?=[ \t\r]|$)/;

/**
 * A conservative upper bound on how deeply the collections of YAML `text` nest, counting flow
 * brackets and block structure (each indentation step counts twice, since a block sequence may
 * sit at its parent key's indentation; a compact `- `, `? `, `: ` indicator is an indentation
 * step; each flow bracket counts twice, since a pair in a flow sequence is a mapping).
 * Stops scanning as soon as the bound passes `limit` and returns a value above it.
 */
export function yamlNestingEstimate(text: string, limit = MANIFEST_MAX_NESTING): number {
  // The library breaks lines at `\n` (and `\r\n`) only; a lone `\r` is a blank inside a line.
  const lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  const indents: number[] = [];
  let max = 0;
  let flowDepth = 0;
  /** Depth of the block line a flow collection started on. */
  let flowBase = 0;
  let quote: '"' | "'" | undefined;
  let blockScalar: BlockScalar | undefined;
  /** The next character begins a node (so a quote or bracket there is structure). */
  let nodeStart: boolean;
  /** The previous node was quoted or a flow collection: a `:` right after it is an indicator. */
  let afterJsonNode = false;

  for (const line of lines) {
    let at = 0;
    if (blockScalar !== undefined) {
      const indent = leadingSpaces(line);
      if (indent === line.length) {
        blockScalar.blankIndent = Math.max(blockScalar.blankIndent, indent);
        continue;
      }
      if (blockScalar.contentIndent === undefined) {
        blockScalar.contentIndent = Math.max(
          indent,
          blockScalar.blankIndent,
          blockScalar.parentIndent + 1,
          blockScalar.parentIndent + (blockScalar.explicit ?? 0),
        );
      }
      if (indent >= blockScalar.contentIndent) continue;
      blockScalar = undefined;
    }
    if (quote !== undefined) {
      const end = quoteEnd(line, 0, quote);
      if (end < 0) continue;
      quote = undefined;
      at = end;
      nodeStart = false;
      afterJsonNode = true;
    } else if (flowDepth === 0) {
      // A line of block structure: its indentation and compact indicators give its depth.
      const indent = leadingSpaces(line);
      if (indent === line.length || line[indent] === '#') continue;
      while (indents.length > 0 && indents[indents.length - 1]! > indent) indents.pop();
      if (indents.length === 0 || indents[indents.length - 1]! < indent) indents.push(indent);
      at = indent;
      if (indent === 0 && /^(?:---|\.\.\.)(?=[ \t]|$)/.test(line)) at = skipBlanks(line, 3);
      // `- - x` nests on one line: each compact indicator opens a level whose indentation is
      // the column of what follows it, which later lines are compared with.
      while (isIndicator(line, at, '-?:')) {
        at = skipBlanks(line, at + 1);
        if (indents[indents.length - 1]! < at) indents.push(at);
      }
      flowBase = 2 * indents.length;
      max = Math.max(max, flowBase);
      if (max > limit) return max;
      nodeStart = true;
      afterJsonNode = false;
    } else {
      // A flow collection left open on an earlier line (a ` #` comment can hide its closer): the
      // library may read what starts this line as a new node, block indicators included, so a
      // node may start here too.
      nodeStart = true;
    }
    const lineIndent = at;

    while (at < line.length) {
      const c = line[at]!;
      if (isBlank(c)) {
        at += 1;
        continue;
      }
      if (c === '#' && (at === 0 || isBlank(line[at - 1]))) break;
      if (flowDepth === 0 && nodeStart && isIndicator(line, at, '-?:')) {
        // A block indicator where a node starts: an error after a key, but the library reads
        // on and may nest, so it counts.
        flowBase += 1;
        max = Math.max(max, flowBase);
        if (max > limit) return max;
        at = skipBlanks(line, at + 1);
        continue;
      }
      if (flowDepth === 0 && isIndicator(line, at, ':')) {
        // A mapping value follows.
        at = skipBlanks(line, at + 1);
        nodeStart = true;
        afterJsonNode = false;
        continue;
      }
      if (flowDepth > 0 && c === ':' && (afterJsonNode || isFlowIndicatorEnd(line, at + 1))) {
        at += 1;
        nodeStart = true;
        afterJsonNode = false;
        continue;
      }
      if (flowDepth > 0 && c === ',') {
        at += 1;
        nodeStart = true;
        afterJsonNode = false;
        continue;
      }
      if (
        flowDepth > 0 &&
        nodeStart &&
        (c === '-' || c === '?') &&
        isFlowIndicatorEnd(line, at + 1)
      ) {
        // `- ` is an error in flow context and `? ` an explicit key; the library may nest
        // either, so each counts.
        flowBase += 1;
        max = Math.max(max, flowBase + 2 * flowDepth);
        if (max > limit) return max;
        at += 1;
        continue;
      }
      if (flowDepth > 0 && c === '?' && isFlowIndicatorEnd(line, at + 1)) {
        at += 1;
        nodeStart = true;
        continue;
      }
      // Openers count wherever the library could read one: at a node start, and anywhere in
      // flow context (where a plain scalar cannot hold a bracket).
      if ((c === '[' || c === '{') && (nodeStart || flowDepth > 0)) {
        flowDepth += 1;
        // Twice: a pair inside a flow sequence (`[a: [b: c]]`) is a mapping of its own.
        max = Math.max(max, flowBase + 2 * flowDepth);
        if (max > limit) return max;
        at += 1;
        nodeStart = true;
        afterJsonNode = false;
        continue;
      }
      if (c === ']' || c === '}') {
        at += 1;
        if (flowDepth === 0) {
          // A stray closer: the library reports it and reads on; a bracket may follow.
          nodeStart = true;
          continue;
        }
        flowDepth -= 1;
        nodeStart = false;
        afterJsonNode = true;
        continue;
      }
      if (nodeStart && (c === '"' || c === "'")) {
        const end = quoteEnd(line, at + 1, c);
        if (end < 0) {
          quote = c;
          break;
        }
        at = end;
        nodeStart = false;
        afterJsonNode = true;
        continue;
      }
      if (nodeStart && (c === '&' || c === '!')) {
        // An anchor or tag: the node itself comes after it.
        at = skipToken(line, at, flowDepth > 0);
        continue;
      }
      if (nodeStart && flowDepth === 0 && (c === '|' || c === '>')) {
        const header = BLOCK_SCALAR_HEADER.exec(line.slice(at));
        const rest = header === null ? '' : line.slice(at + header[0].length).trim();
        if (header !== null && (rest === '' || rest.startsWith('#'))) {
          const digit = /[1-9]/.exec(header[0]);
          blockScalar = {
            contentIndent: undefined,
            parentIndent: lineIndent,
            blankIndent: 0,
            explicit: digit === null ? undefined : Number(digit[0]),
          };
          break;
        }
      }
      // Anything else is (part of) a plain scalar or an alias.
      nodeStart = false;
      afterJsonNode = false;
      at += 1;
    }
  }
  return max;
}

function leadingSpaces(line: string): number {
  let at = 0;
  while (at < line.length && line[at] === ' ') at += 1;
  return at;
}

function isBlank(c: string | undefined): boolean {
  return c === ' ' || c === '\t' || c === '\r';
}

function skipBlanks(line: string, at: number): number {
  while (at < line.length && isBlank(line[at])) at += 1;
  return at;
}

/** `line[at]` is one of `chars` followed by a blank or the end of the line. */
function isIndicator(line: string, at: number, chars: string): boolean {
  const c = line[at];
  if (c === undefined || !chars.includes(c)) return false;
  const next = line[at + 1];
  return next === undefined || isBlank(next);
}

/** In flow context, `:` and `?` are indicators when a blank, flow indicator or line end follows. */
function isFlowIndicatorEnd(line: string, at: number): boolean {
  const next = line[at];
  return next === undefined || isBlank(next) || ',[]{}'.includes(next);
}

function skipToken(line: string, at: number, inFlow: boolean): number {
  at += 1;
  while (at < line.length) {
    const c = line[at]!;
    if (isBlank(c) || (inFlow && ',[]{}'.includes(c))) break;
    at += 1;
  }
  return at;
}

/** The offset just past the closing quote, or -1 when the scalar continues on the next line. */
function quoteEnd(line: string, at: number, quote: '"' | "'"): number {
  while (at < line.length) {
    const c = line[at]!;
    if (quote === '"' && c === '\\') {
      at += 2;
      continue;
    }
    if (c === quote) {
      if (quote === "'" && line[at + 1] === "'") {
        at += 2;
        continue;
      }
      return at + 1;
    }
    at += 1;
  }
  return -1;
}
