// recall for the AI SDK: a language-model middleware that, before each
// model call, publishes the call's messages as the conversation's
// checkpoint and replaces its prompt with the one recall assembles within
// the budget (the evidence message, the turns that fit, large tool results
// compacted, the current request whole).
//
//   const model = wrapLanguageModel({ model: openai("gpt-4.1"), middleware: recallMiddleware({ url, token, budget: 16000 }) });
//   await generateText({ model, messages, providerOptions: { recall: { userId, conversationId } } });
//
// It works on the AI SDK's language-model prompt (specification v3, the
// prompt every generateText, streamText and tool-loop step sends): the
// messages are mapped to recall's flat form, and recall's answer back to
// the messages they came from. Where recall is unreachable, slow or refuses
// the token, the call goes on with the history cut by a simple rule (the
// newest whole turns within the budget) and a warning; recall never fails a
// call.

import { RecallClient } from "./index.js";
import { answerById, kindText, mediaRef, parseJSON, restoreParts, textOf, unchanged } from "./parts.js";
import { DEFAULT_TIMEOUT_MS, HEAL_WARNING, PUBLISH_INTERVAL_MS, assemble, budgetOf, fallback, reasonOf, report, warn } from "./prompt.js";
import { Publisher } from "./publisher.js";

// Flat messages derived from one AI SDK message carry its id "m<k>", k
// counting the prompt's messages that are not system messages, with a
// suffix for the parts split off: ".r" its reasoning, ".s" what rides
// along with it (tool approval responses), ".<j>" its j-th tool result.

const isImage = (mediaType) => typeof mediaType === "string" && mediaType.startsWith("image/");

function withoutOptions(part) {
  const { providerOptions, type, ...rest } = part;
  return rest;
}

// A content part of a user or assistant message, as recall holds it.
function contentPart(p) {
  switch (p.type) {
    case "text":
      return { type: "text", text: p.text };
    case "file":
      return mediaRef(isImage(p.mediaType) ? "image" : "file", p);
    case "tool-call":
      return kindText(`provider tool call ${p.toolName}`, p.input);
    case "tool-result":
      return kindText(`provider tool result ${p.toolName}`, p.output);
    default:
      return kindText(p.type ?? "part", withoutOptions(p));
  }
}

// A tool result's output as recall holds it: text, JSON as text, or parts.
function outputContent(output) {
  switch (output?.type) {
    case "text":
    case "error-text":
      return output.value;
    case "json":
    case "error-json":
      return JSON.stringify(output.value ?? null);
    case "execution-denied":
      return kindText("execution denied", output.reason ?? "").text;
    case "content":
      return (output.value ?? []).map((p) => {
        switch (p.type) {
          case "text":
            return { type: "text", text: p.text };
          case "image-data":
            return mediaRef("image", p);
          case "image-url":
            return mediaRef("image", { url: p.url });
          case "image-file-id":
            return mediaRef("image", { fileId: p.fileId });
          case "file-data":
            return mediaRef("file", p);
          case "file-url":
            return mediaRef("file", { url: p.url, mediaType: p.mediaType });
          case "file-id":
            return mediaRef("file", { fileId: p.fileId });
          default:
            return kindText(p.type ?? "part", withoutOptions(p));
        }
      });
    default:
      return kindText(output?.type ?? "output", output ?? null).text;
  }
}

/**
 * Maps an AI SDK prompt (LanguageModelV3Prompt) to recall: the system text
 * (every system message, in order), the flat messages to publish and
 * assemble, and the plan fromRecall maps recall's answer back with.
 */
export function toRecall(prompt) {
  const system = [];
  const messages = [];
  const plan = []; // per prompt message: {message, system, leading} or {message, k, turn, flats: [{flat, chat}]}
  let k = 0, turn = -1;
  for (const message of prompt) {
    if (message.role === "system") {
      system.push(message.content);
      plan.push({ message, system: true, leading: k === 0 });
      continue;
    }
    if (message.role === "user") turn++;
    const id = `m${k}`;
    const entry = { message, k, turn: Math.max(turn, 0), flats: [] };
    const add = (flat, chat = true) => {
      messages.push(flat);
      entry.flats.push({ flat, chat });
    };
    const parts = Array.isArray(message.content) ? message.content : [{ type: "text", text: String(message.content ?? "") }];
    switch (message.role) {
      case "user":
        add({ id, role: "user", content: parts.map(contentPart) });
        break;
      case "assistant": {
        const reasoning = parts.filter((p) => p.type === "reasoning");
        if (reasoning.length > 0) {
          add({ id: `${id}.r`, role: "assistant", type: "thinking", content: reasoning.map((p) => ({ type: "text", text: p.text ?? "" })) }, false);
        }
        const calls = parts.filter((p) => p.type === "tool-call" && !p.providerExecuted);
        const content = parts.filter((p) => p.type !== "reasoning" && !calls.includes(p)).map(contentPart);
        // No content is "", as recall answers it.
        const flat = { id, role: "assistant", content: content.length > 0 ? content : "" };
        if (calls.length > 0) flat.tool_calls = calls.map((c) => ({ id: c.toolCallId, name: c.toolName, args: c.input ?? {} }));
        add(flat);
        break;
      }
      case "tool": {
        const others = parts.filter((p) => p.type !== "tool-result");
        if (others.length > 0) {
          add({ id: `${id}.s`, role: "tool", type: "status", content: others.map((p) => kindText(p.type ?? "part", withoutOptions(p))) }, false);
        }
        parts.forEach((p, j) => {
          if (p.type !== "tool-result") return;
          add({ id: `${id}.${j}`, role: "tool", tool_call_id: p.toolCallId, name: p.toolName, content: outputContent(p.output) });
        });
        break;
      }
      default:
        add({ id, role: "assistant", content: [kindText(`${message.role} message`, parts.map(withoutOptions))] });
    }
    plan.push(entry);
    k++;
  }
  return { system: system.length > 0 ? system.join("\n\n") : undefined, messages, plan };
}

const textPart = (text) => ({ type: "text", text });

// restoreOutput maps a tool result recall changed (compacted) back to the
// original output's kind.
function restoreOutput(output, sent, got) {
  const text = textOf(got);
  const value = parseJSON(text);
  switch (output?.type) {
    case "json":
      return value === undefined ? { type: "text", value: text } : { ...output, value };
    case "error-json":
      return value === undefined ? { type: "error-text", value: text } : { ...output, value };
    case "error-text":
      return { ...output, value: text };
    case "content":
      return { ...output, value: restoreParts(output.value, sent, got, textPart) };
    default:
      return { type: "text", value: text };
  }
}

// restore rebuilds one prompt message from the flat messages recall
// returned for it (by id).
function restore(entry, got) {
  const { message, flats } = entry;
  if (flats.every(({ flat, chat }) => !chat || unchanged(flat, got.get(flat.id)))) return message;
  const parts = Array.isArray(message.content) ? message.content : [];
  switch (message.role) {
    case "user": {
      const { flat } = flats[0];
      return { ...message, content: restoreParts(parts, flat.content, got.get(flat.id).content, textPart) };
    }
    case "assistant": {
      const { flat } = flats.find((f) => f.chat);
      const r = got.get(flat.id);
      const kept = new Set((r.tool_calls ?? []).map((c) => c.id));
      const content = parts.filter((p) => p.type !== "reasoning" && !(p.type === "tool-call" && !p.providerExecuted));
      const restored = restoreParts(content, flat.content, r.content, textPart);
      const out = [];
      let used = false;
      for (const p of parts) {
        if (p.type === "reasoning") out.push(p);
        else if (p.type === "tool-call" && !p.providerExecuted) {
          if (kept.has(p.toolCallId)) out.push(p);
        } else if (restored.length === content.length) out.push(restored[content.indexOf(p)]);
        else if (!used) {
          out.push(...restored);
          used = true;
        }
      }
      if (!used && restored.length !== content.length) out.push(...restored);
      return { ...message, content: out };
    }
    case "tool": {
      const out = [];
      parts.forEach((p, j) => {
        if (p.type !== "tool-result") return out.push(p);
        const f = flats.find(({ flat }) => flat.id === `m${entry.k}.${j}`);
        const r = got.get(f.flat.id);
        if (r) out.push(unchanged(f.flat, r) ? p : { ...p, output: restoreOutput(p.output, f.flat.content, r.content) });
      });
      return { ...message, content: out };
    }
    default:
      return message;
  }
}

/**
 * Maps recall's answer (the flat messages of POST …/context, or of the
 * adapters' own cut) back to an AI SDK prompt: the system messages, the
 * evidence message as an assistant message, and each message recall kept,
 * as it was where recall kept it as sent. A message's reasoning and what
 * rides along with it come back with it; a message of only such parts
 * comes back when its turn does.
 */
export function fromRecall(answer, plan) {
  const { got, evidence } = answerById(answer);
  const kept = new Set();
  const turns = new Set();
  for (const e of plan) {
    if (e.system) continue;
    if (e.flats.some(({ flat, chat }) => chat && got.has(flat.id))) {
      kept.add(e);
      turns.add(e.turn);
    }
  }
  for (const e of plan) if (!e.system && !e.flats.some(({ chat }) => chat) && turns.has(e.turn)) kept.add(e);

  const head = [];
  const body = [];
  plan.forEach((e, i) => {
    if (e.system) {
      // A system message stays where it was when what follows it does
      // (or nothing does), and goes to the head when that was left out.
      const next = plan.slice(i + 1).find((n) => !n.system);
      (e.leading || (next && !kept.has(next)) ? head : body).push(e.message);
      return;
    }
    if (kept.has(e)) body.push(restore(e, got));
  });
  if (evidence) head.push({ role: "assistant", content: [{ type: "text", text: textOf(evidence.content) }] });
  return [...head, ...body];
}

// The tool schemas recall charges: what the provider is sent of each tool.
function toolSchemas(tools) {
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  return tools.map((t) => {
    const { providerOptions, ...schema } = t;
    return schema;
  });
}

// providerOptions without recall's own.
function withoutRecall(providerOptions) {
  if (!providerOptions || !("recall" in providerOptions)) return providerOptions;
  const { recall, ...rest } = providerOptions;
  return rest;
}

const callOption = (name) => (params) => {
  const v = params?.providerOptions?.recall?.[name];
  return typeof v === "string" ? v : undefined;
};

/**
 * The middleware. options:
 * - client: a RecallClient; or url, token (and nats, to publish over
 *   JetStream) to make one.
 * - userId, conversationId: strings, or functions of the call's params.
 *   Default to the call's providerOptions.recall.userId and .conversationId.
 * - budget: the prompt's budget, a number of estimated tokens or recall's
 *   budget fields ({prompt, context_window, response_reserve, …}). Defaults
 *   to recall's defaults.
 * - timeoutMs: how long a call waits for recall before it goes on with its
 *   own cut of the history. Defaults to 2,000.
 * - evidence: false leaves recall's evidence message out. Defaults to true.
 * - publish: false publishes nothing (another part of the agent does).
 *   Defaults to true.
 * - logger: where warnings go (logger.warn(message, fields)); they never
 *   carry message text. Defaults to console.
 * - onPrompt(info): called after each assembly with its estimates, or with
 *   fallback set when the adapter cut the history itself.
 */
export function recallMiddleware(options = {}) {
  const {
    client,
    url,
    token,
    nats,
    userId = callOption("userId"),
    conversationId = callOption("conversationId"),
    timeoutMs = DEFAULT_TIMEOUT_MS,
    evidence = true,
    publish = true,
    logger = console,
    onPrompt,
  } = options;
  const budget = budgetOf(options.budget);
  // Publishing waits longer than a call would for recall: it is not in the
  // call's way.
  const recall = client ?? new RecallClient({ url, token, nats, timeoutMs: Math.max(timeoutMs, 10_000) });
  const publisher = new Publisher(recall, {
    onError: (err, { conversationId: conv }) => warn(logger, `could not publish the conversation's checkpoint (the next call publishes it again): ${reasonOf(err)}`, { conversation_id: conv }),
    onHeal: ({ conversationId: conv }) => warn(logger, HEAL_WARNING, { conversation_id: conv }),
    minIntervalMs: PUBLISH_INTERVAL_MS,
    defer: true,
  });
  const userOf = typeof userId === "function" ? userId : () => userId;
  const conversationOf = typeof conversationId === "function" ? conversationId : () => conversationId;

  async function transformParams({ params }) {
    const started = performance.now();
    const { system, messages, plan } = toRecall(params.prompt);
    const tools = toolSchemas(params.tools);
    const user = userOf(params);
    const conv = conversationOf(params);
    let answer;
    if (!messages.some((m) => m.role === "user" && m.type === undefined)) {
      // No request to assemble for: the call goes as it is.
      if (publish && user && conv) publisher.schedule(user, conv, messages, { conversationId: conv });
      return { ...params, providerOptions: withoutRecall(params.providerOptions) };
    }
    if (!user || !conv) {
      answer = fallback(messages, { system, tools, budget, logger, what: "the call" }, "it names no recall user or conversation (set providerOptions.recall.userId and .conversationId, or give recallMiddleware userId and conversationId)");
    } else {
      answer = await assemble(recall, user, conv, messages, { system, tools, budget, evidence, timeoutMs, signal: params.abortSignal, logger, what: "the call" });
      // Published while the model answers: its digests are not in the call's way.
      if (publish) publisher.schedule(user, conv, messages, { conversationId: conv });
      if (evidence) publisher.observe(user, conv, answer.result?.evidence?.cursor);
    }
    const prompt = fromRecall(answer.messages, plan);
    report(onPrompt, answer, { userId: user, conversationId: conv, ms: performance.now() - started, messages: messages.length, kept: answer.messages.filter((m) => m.id).length });
    return { ...params, prompt, providerOptions: withoutRecall(params.providerOptions) };
  }

  return {
    specificationVersion: "v3",
    transformParams,
    /** The client that publishes and assembles. */
    client: recall,
    /** Resolves once every publish under way has ended (before exiting). */
    flush: () => publisher.flush(),
  };
}
