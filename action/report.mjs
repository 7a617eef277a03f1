// Reports a `packwarden pack verify --all --json` document to GitHub Actions: one log line per
// pack, an annotation per refusal, a job summary table and step outputs.
//
//   node report.mjs <report.json> [<packwarden-stderr.txt>]
//
// Everything printed here that comes from a pack (folder names, pack names, versions, kids,
// messages) is attacker-controlled: a pull request can add a folder named
// "x\n::add-mask::…" or "a##[stop-commands]t". The runner reads workflow commands from every line
// of the step's stdout and stderr: `::command …::data` at the start of a line (after leading
// whitespace), the legacy `##[command …]data` anywhere in a line, and it splits lines on CR as
// well as LF. So (apps/cli/README.md "GitHub Action", "What it prints"):
//  - every plain log line starts with a word this script chooses, never with a value;
//  - values in plain lines are %-escaped (`%`, CR, LF, every other control character, bidi
//    controls, and `[`), so no value can end a line or form a command; decodeURIComponent undoes it;
//  - annotations show control characters as visible `\u001b` escapes (CR and LF survive);
//  - values inside the action's own commands use the runner's own escaping (data: `%`, CR, LF;
//    properties: also `:` and `,`), which the runner undoes, so annotations show them exactly;
//  - packwarden's stderr is shown the same way, each line prefixed with "packwarden: ".
import { appendFileSync, readFileSync } from 'node:fs';

// Every character a log viewer or terminal would act on (C0 but CR and LF, DEL, C1, bidi
// overrides and isolates, Unicode line separators), matched without writing control characters
// into this file.
const UNSAFE = new RegExp(
  // eslint-disable-next-line no-control-regex -- the list of control characters to neutralise
  '[\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]',
  'g',
);

// Plain log text: percent-escape what could end the line or be read as a command.
function logValue(value) {
  return (
    String(value)
      .replace(/%/g, '%25')
      .replace(/\r/g, '%0D')
      .replace(/\n/g, '%0A')
      .replace(UNSAFE, (c) => encodeURIComponent(c))
      // No value holds a `[`, so none can complete a legacy `##[command]` (the runner finds that
      // anywhere in a line, and may compare culture-sensitively, skipping ignorable characters).
      .replace(/\[/g, '%5B')
  );
}

// Annotation properties and messages are shown to people: controls become visible `\u001b`-style
// escapes (line feeds stay, escaped for the runner below).
const visible = (value) =>
  String(value).replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

// Workflow-command data and properties: the runner's escaping, undone by the runner.
const commandData = (value) =>
  String(value).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const commandProperty = (value) => commandData(value).replace(/:/g, '%3A').replace(/,/g, '%2C');

// Markdown table cell: entities for everything that could leave the cell or start markup.
const markdownCell = (value) =>
  String(value)
    .replace(/[&<>|`[\]*_\\!#~]/g, (c) => `&#${c.charCodeAt(0)};`)
    .replace(/\r\n|\r|\n/g, ' ');

function annotate(level, properties, message) {
  const props = Object.entries(properties)
    .map(([key, value]) => `${key}=${commandProperty(visible(value))}`)
    .join(',');
  console.log(`::${level} ${props}::${commandData(visible(message))}`);
}

function showStderr(file) {
  if (!file) return;
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return;
  }
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line !== '') console.log(`packwarden: ${logValue(line)}`);
  }
}

function main([reportFile, stderrFile]) {
  showStderr(stderrFile);
  let report;
  try {
    report = JSON.parse(readFileSync(reportFile, 'utf8'));
  } catch {
    annotate(
      'error',
      { title: 'packwarden verify failed' },
      'packwarden printed no report (see the log above)',
    );
    return 1;
  }
  // A failure before any pack was checked (bad flags, no packs under packs-dir): one error.
  if (!Array.isArray(report.packs)) {
    const error = report.error ?? {};
    const message = `${error.message ?? 'packwarden failed without a report'}${error.hint ? `\nhint: ${error.hint}` : ''}`;
    console.log(`error ${logValue(error.code ?? '')}: ${logValue(message)}`);
    annotate('error', { title: `packwarden: ${error.code ?? 'failed'}` }, message);
    return 1;
  }
  const rows = [];
  for (const pack of report.packs) {
    const r = pack.result ?? {};
    const id = r.pack ? `${r.pack}@${r.packVersion}` : pack.relativeDir;
    const detail = pack.refusal
      ? `${pack.refusal.title}${pack.refusal.detail ? `: ${pack.refusal.detail}` : ''}`
      : `signed by ${r.kid}`;
    // The kind is one of packwarden's own words; it starts the line, values follow it.
    const kind = /^[a-z-]+$/.test(pack.kind) ? pack.kind : 'unknown';
    console.log(
      `${kind.padEnd(22)} ${logValue(id)}  ${logValue(detail)}  (folder ${logValue(pack.relativeDir)})`,
    );
    // An unsigned pack has no pack.sig to point at: its agent.yaml carries the annotation.
    const file = `${pack.relativeDir}/${kind === 'unsigned' ? 'agent.yaml' : 'pack.sig'}`;
    if (pack.failed) {
      annotate(
        'error',
        { file, title: `${kind}: ${id}` },
        `${detail}\nFix: ${pack.refusal?.fix ?? ''}`,
      );
    } else if (kind === 'unsigned') {
      annotate('warning', { file, title: `unsigned: ${id}` }, 'this pack has no pack.sig');
    }
    const icon = pack.failed ? '❌' : kind === 'verified' ? '✅' : '⚠️';
    rows.push(
      `| ${icon} ${kind} | ${markdownCell(id)} | ${markdownCell(pack.relativeDir)} | ${markdownCell(detail)} |`,
    );
  }
  const count = (n) => (Number.isSafeInteger(n) && n >= 0 ? n : 0);
  const verified = count(report.summary?.verified);
  const unsigned = count(report.summary?.unsigned);
  const failed = count(report.summary?.failed);
  console.log(`summary: verified ${verified}, unsigned ${unsigned}, failed ${failed}`);
  if (process.env.GITHUB_STEP_SUMMARY) {
    appendFileSync(
      process.env.GITHUB_STEP_SUMMARY,
      [
        `### packwarden: verified ${verified}, unsigned ${unsigned}, failed ${failed}`,
        '',
        '| result | pack | folder | detail |',
        '|---|---|---|---|',
        ...rows,
        '',
      ].join('\n') + '\n',
    );
  }
  if (process.env.GITHUB_OUTPUT) {
    // The report path comes from RUNNER_TEMP; refuse one that could add an output line.
    const path = /[\r\n]/.test(reportFile) ? '' : reportFile;
    appendFileSync(
      process.env.GITHUB_OUTPUT,
      `verified=${verified}\nunsigned=${unsigned}\nfailed=${failed}\nreport=${path}\n`,
    );
  }
  return 0;
}

process.exitCode = main(process.argv.slice(2));
