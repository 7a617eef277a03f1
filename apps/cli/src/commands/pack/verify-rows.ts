import { terminalSafe } from '../../io.js';

/** One pack's row in `pack verify`'s human output. Every field but `kind` comes from the pack. */
export interface VerifyRow {
  kind: string;
  /** `name@version` once the signature vouches for it, else `-`. */
  pack: string;
  /** The folder checked, relative to the working directory. */
  folder: string;
  /** The whole message; it may hold several lines. */
  message: string;
}

/** The longest result word (`trust-root-unavailable`): the first column never moves. */
const KIND_WIDTH = 22;
const GAP = '  ';

/**
 * Lays rows out in four columns (result, pack, folder, message) separated by at least two spaces
 * whatever their lengths, so a long name never runs into the next column. The message is never
 * cut: its further lines continue under the message column. Each field is made terminal-safe
 * first (a line feed inside a name or folder cannot start a forged row), and widths are measured
 * on what is shown.
 */
export function formatVerifyRows(rows: readonly VerifyRow[]): string {
  const shown = rows.map((row) => ({
    kind: terminalSafe(row.kind),
    pack: terminalSafe(row.pack),
    folder: terminalSafe(row.folder),
    lines: row.message
      .split(/\r\n|\n|\r/)
      .map((line) => terminalSafe(line))
      .filter((line, index, all) => line !== '' || index < all.length - 1),
  }));
  const kindWidth = Math.max(KIND_WIDTH, ...shown.map((row) => row.kind.length));
  const packWidth = Math.max(...shown.map((row) => row.pack.length));
  const folderWidth = Math.max(...shown.map((row) => row.folder.length));
  const indent = ' '.repeat(kindWidth + packWidth + folderWidth + GAP.length * 3);
  let text = '';
  for (const row of shown) {
    const [first = '', ...rest] = row.lines;
    const head = [row.kind.padEnd(kindWidth), row.pack.padEnd(packWidth), row.folder].join(GAP);
    text +=
      first === '' ? `${head}\n` : `${head.padEnd(indent.length - GAP.length)}${GAP}${first}\n`;
    for (const line of rest) text += `${indent}${line}\n`;
  }
  return text;
}
