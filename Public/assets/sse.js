// A Server-Sent Events parser for a stream read through fetch() (EventSource cannot send an
// Authorization header). Follows the WHATWG event-stream rules: lines end in CRLF, LF or CR;
// a blank line dispatches; "data" lines join with LF; a line starting with ":" is a comment.

export class EventStreamParser {
  constructor(onEvent, onComment = () => {}) {
    this.onEvent = onEvent;
    this.onComment = onComment;
    this.buffer = "";
    this.skipLineFeed = false; // the last read ended in CR: a LF starting the next one ends no line
    this.lastEventID = "";
    this.retry = null;
    this.reset();
  }

  reset() {
    this.eventType = "";
    this.data = [];
    this.hasData = false;
  }

  /** Feeds decoded text; any number of complete or partial lines. */
  push(text) {
    if (this.skipLineFeed && text.startsWith("\n")) text = text.slice(1);
    this.skipLineFeed = false;
    this.buffer += text;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      // A CR ending this read ends the line now (no waiting for the next read), and may be
      // the first half of a CRLF whose LF arrives next.
      if (match[0] === "\r" && this.buffer === "") this.skipLineFeed = true;
      this.line(line);
    }
  }

  line(line) {
    if (line === "") {
      if (this.hasData) {
        this.onEvent({ type: this.eventType || "message", data: this.data.join("\n"), id: this.lastEventID });
      }
      this.reset();
      return;
    }
    if (line.startsWith(":")) {
      this.onComment(line.slice(1));
      return;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event": this.eventType = value; break;
      case "data": this.data.push(value); this.hasData = true; break;
      case "id": if (!value.includes("\0")) this.lastEventID = value; break;
      case "retry": if (/^\d+$/.test(value)) this.retry = Number(value); break;
      default: break; // Unknown fields are ignored, as the standard says.
    }
  }
}
