import type { QuestionFrame, RunEvent, RunOutcome, WelcomeFrame } from '@packwarden/runner-host';
import { terminalSafe, useColors, type CliIo } from '../../io.js';

const MAX_SHOWN = 300;

// Everything a turn prints comes from the engine (model text, tool names and payloads, warnings):
// it is shown, never obeyed by the terminal. Free text keeps its line feeds and tabs; a tool name
// or payload stays on its line.
const block = (text: string) => terminalSafe(text, { multiline: true });
const inline = (text: string) => terminalSafe(text);

function brief(value: unknown): string {
  if (value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return inline(text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}…` : text);
}

/** How `packwarden run` shows a turn: live with colours on a terminal, plain lines otherwise. */
export interface TurnRenderer {
  welcome(frame: WelcomeFrame): void;
  event(event: RunEvent): void;
  question(frame: QuestionFrame, answer: string): void;
  end(outcome: RunOutcome, workspace: string): void;
}

/** `--json`: every frame the sandbox sent, one JSON object per line. */
export function jsonRenderer(io: CliIo): TurnRenderer {
  const print = (frame: object) => io.stdout.write(`${JSON.stringify(frame)}\n`);
  return {
    welcome: print,
    event: (event) => {
      // The terminal frame is printed by end(), once.
      if (event.type !== 'result' && event.type !== 'failed') print(event);
    },
    question: () => {},
    end: (outcome) => print(outcome),
  };
}

export function humanRenderer(io: CliIo): TurnRenderer {
  const tty = io.stdout.isTTY === true;
  // Colour follows the stream and NO_COLOR / FORCE_COLOR; the layout (thinking shown, arrows)
  // follows whether a person is watching.
  const colors = useColors(io);
  const paint = (code: string, text: string) => (colors ? `\u001b[${code}m${text}\u001b[0m` : text);
  let atLineStart = true;
  const write = (text: string) => {
    if (text === '') return;
    io.stdout.write(text);
    atLineStart = text.endsWith('\n');
  };
  const line = (text: string) => {
    if (!atLineStart) write('\n');
    write(`${text}\n`);
  };
  return {
    welcome: () => {},
    event(event) {
      switch (event.type) {
        case 'text':
          return write(block(event.delta));
        case 'thinking':
          if (tty) write(paint('2;3', block(event.delta)));
          return;
        case 'tool_start':
          return line(
            tty
              ? paint('36', `▸ ${inline(event.name)} ${brief(event.input)}`)
              : `[tool] ${inline(event.name)} ${brief(event.input)}`,
          );
        case 'tool_end': {
          const label = event.isError === true ? 'tool failed' : 'tool done';
          return line(
            tty
              ? paint(
                  event.isError === true ? '31' : '36',
                  `◂ ${inline(event.name)} → ${brief(event.output)}`,
                )
              : `[${label}] ${inline(event.name)} → ${brief(event.output)}`,
          );
        }
        case 'progress':
          return line(
            tty ? paint('2', `… ${inline(event.message)}`) : `[progress] ${inline(event.message)}`,
          );
        case 'warning':
          if (!atLineStart) write('\n');
          io.stderr.write(`warning: ${block(event.message)} (${inline(event.code)})\n`);
          return;
        default:
          return;
      }
    },
    question(frame, answer) {
      line(`${tty ? paint('33', '?') : '[question]'} ${block(frame.prompt)} → ${inline(answer)}`);
    },
    end(outcome, workspace) {
      if (!atLineStart) write('\n');
      if (outcome.type === 'result') {
        io.stderr.write(
          outcome.stopReason === 'end_turn' ? 'turn completed\n' : 'turn cancelled\n',
        );
      } else {
        io.stderr.write(
          `turn failed: ${block(outcome.error.message)} (${inline(outcome.error.code)})\n`,
        );
      }
      io.stderr.write(`workspace: ${inline(workspace)}\n`);
    },
  };
}
