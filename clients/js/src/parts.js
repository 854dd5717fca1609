// Content parts as the adapters publish them to recall, and back. recall
// reads text from {"type":"text"} parts and counts every other part as an
// image or attachment; the adapters publish media by reference (never
// their bytes) and carry what the checkpoint format cannot hold as text
// with its kind. Recall's answer is mapped back onto the original parts:
// a part recall kept as it was sent is the original again.

import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";

/** The bytes of inline data: a Uint8Array, an ArrayBuffer, base64 text or a base64 data: URL; null for anything else. */
export function dataBytes(data) {
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  if (typeof data === "string") {
    const m = /^data:[^,]*;base64,(.*)$/s.exec(data);
    return Buffer.from(m ? m[1] : data, "base64");
  }
  return null;
}

const isURL = (s) => typeof s === "string" && /^(https?|gs|s3):/i.test(s);

/**
 * A media part by reference: {type: kind} with its media type and file
 * name, and a URL or file id as it is, or inline data as its size and
 * SHA-256 (the bytes themselves are never published).
 */
export function mediaRef(kind, { mediaType, filename, url, fileId, data, detail } = {}) {
  const p = { type: kind };
  if (mediaType) p.media_type = mediaType;
  if (filename) p.filename = filename;
  if (detail) p.detail = detail;
  if (fileId !== undefined && fileId !== null) p.file_id = fileId;
  else if (url !== undefined && url !== null) p.url = String(url);
  else if (data instanceof URL) p.url = data.href;
  else if (isURL(data)) p.url = data;
  else if (data !== undefined && data !== null) {
    const b = dataBytes(data);
    if (b) {
      p.bytes = b.length;
      p.sha256 = createHash("sha256").update(b).digest("hex");
    }
  }
  return p;
}

/**
 * A part (or item) the checkpoint format cannot hold, carried as a text
 * part with its kind: "[kind] text" for a string, "[kind] JSON" for
 * anything else.
 */
export function kindText(kind, value) {
  if (typeof value === "string") return { type: "text", text: `[${kind}] ${value}` };
  let body;
  try {
    body = JSON.stringify(value, (k, v) => (v instanceof Uint8Array ? mediaRef("data", { data: v }) : v));
  } catch {
    body = undefined;
  }
  return { type: "text", text: body === undefined ? `[${kind}]` : `[${kind}] ${body}` };
}

/** The text of flat content: a string, or its text parts joined by newlines. */
export const textOf = (content) =>
  typeof content === "string" ? content : (content ?? []).filter((p) => p?.type === "text").map((p) => p.text).join("\n");

/**
 * Maps content recall returned back onto the originals it was published
 * from (sent, part for part): as it was where recall kept it as sent,
 * textPart(text) where it changed a part (the placeholder of an older
 * turn's image), and one textPart where it rewrote the whole (a shortened
 * text). An empty text gives no part.
 */
export function restoreParts(originals, sent, got, textPart) {
  if (isDeepStrictEqual(got, sent)) return originals;
  if (!Array.isArray(got) || !Array.isArray(sent) || got.length !== sent.length) {
    const text = textOf(got);
    return text === "" ? [] : [textPart(text)];
  }
  return got.map((p, i) => (isDeepStrictEqual(p, sent[i]) ? originals[i] : textPart(textOf([p]))));
}

/** Whether recall returned a flat message as it was sent (content and tool calls). */
export const unchanged = (sent, got) =>
  got !== undefined && isDeepStrictEqual(got.content, sent.content) && isDeepStrictEqual(got.tool_calls ?? [], sent.tool_calls ?? []);

/** JSON.parse of s, or undefined when s is not JSON. */
export function parseJSON(s) {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

/**
 * recall's answer by message id, and its evidence message: the assistant
 * message without an id (recall's system message is left out).
 */
export function answerById(answer) {
  const got = new Map();
  let evidence = null;
  for (const m of answer) {
    if (m.role === "system") continue;
    if (!m.id && m.role === "assistant" && evidence === null) evidence = m;
    else if (m.id) got.set(m.id, m);
  }
  return { got, evidence };
}
