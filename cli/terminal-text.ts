/**
 * Text from the service (a workflow's logs and errors, names, messages) made safe to print on a
 * terminal: control characters are shown escaped instead of acted on, so code running in a
 * workflow cannot clear the screen, retitle the window, write the clipboard (OSC 52) or print a
 * line that looks like wsctl's own.
 */

// C0 controls (but tab), DEL, C1 controls, and the bidirectional overrides and isolates that
// reorder what is shown.
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex -- the same, newlines kept
const CONTROL_BUT_NEWLINE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function escaped(c: string): string {
  if (c === '\n') return '\\n';
  if (c === '\r') return '\\r';
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * `text` with every control character escaped (`\u001b`, `\n`, `\r`): for one field printed on
 * one line, such as a log message, so that it cannot end that line and start a fake one.
 */
export function printable(text: string): string {
  return text.replace(CONTROL, escaped);
}

/** `text` with every control character but the newline escaped: for whole lines wsctl prints. */
export function printableLines(text: string): string {
  return text.replace(CONTROL_BUT_NEWLINE, escaped);
}
