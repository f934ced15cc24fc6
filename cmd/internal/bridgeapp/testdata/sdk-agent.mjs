#!/usr/bin/env node
// The smallest real agent on the published TypeScript ACP SDK
// (@agentclientprotocol/sdk), for the end-to-end tests: the package does
// not ship its example agent, so this one follows the example's turn —
// text, a tool_call, then session/request_permission for it with the same
// toolCallId, allow_once/reject_once options — with a model behind it:
// OpenAI Chat Completions, streamed, at $OPENAI_BASE_URL. The model may
// call one tool, write_file; the agent asks permission, writes the file
// in the session's cwd when allowed, and gives the model the result.
//
// Run as `node sdk-agent.mjs` with ACP_AGENTS_DIR naming the directory the
// SDK was installed in (scripts/agents/install.sh). Extra arguments (the
// bridge's `acp`) are ignored.

import { createRequire } from "node:module";
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const dir = process.env.ACP_AGENTS_DIR;
if (!dir) {
  console.error("sdk-agent: ACP_AGENTS_DIR is not set");
  process.exit(2);
}
const sdkPath = createRequire(resolve(dir, "package.json")).resolve("@agentclientprotocol/sdk");
const acp = await import(pathToFileURL(sdkPath).href);

const baseURL = (process.env.OPENAI_BASE_URL ?? "").replace(/\/$/, "");
const model = process.env.OPENAI_MODEL ?? "sdk-agent-model";
const tools = [
  {
    type: "function",
    function: {
      name: "write_file",
      description: "Write a text file in the working directory.",
      parameters: {
        type: "object",
        properties: { path: { type: "string" }, content: { type: "string" } },
        required: ["path", "content"],
      },
    },
  },
];

const sessions = new Map(); // sessionId → { cwd, messages, abort }

// completion streams one chat completion, calling onText for each text
// delta, and returns the assistant message (text and tool calls).
async function completion(messages, signal, onText) {
  const resp = await fetch(`${baseURL}/chat/completions`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Authorization: `Bearer ${process.env.OPENAI_API_KEY ?? ""}`,
    },
    body: JSON.stringify({ model, messages, tools, stream: true }),
    signal,
  });
  if (!resp.ok) {
    throw new Error(`model answered ${resp.status}`);
  }
  const msg = { role: "assistant", content: "", tool_calls: [] };
  const decoder = new TextDecoder();
  let buf = "";
  for await (const bytes of resp.body) {
    buf += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, end);
      buf = buf.slice(end + 2);
      for (const line of frame.split("\n")) {
        if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
        const delta = JSON.parse(line.slice(6)).choices?.[0]?.delta ?? {};
        if (delta.content) {
          msg.content += delta.content;
          await onText(delta.content);
        }
        for (const tc of delta.tool_calls ?? []) {
          const call = (msg.tool_calls[tc.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
          call.id += tc.id ?? "";
          call.function.name += tc.function?.name ?? "";
          call.function.arguments += tc.function?.arguments ?? "";
        }
      }
    }
  }
  if (msg.tool_calls.length === 0) delete msg.tool_calls;
  return msg;
}

// runTool asks permission for a write_file call and runs it when allowed;
// it returns the result for the model, or null when the turn was cancelled.
async function runTool(client, sessionId, session, call) {
  const args = JSON.parse(call.function.arguments || "{}");
  const toolCall = {
    toolCallId: call.id,
    title: `Write ${args.path}`,
    kind: "edit",
    status: "pending",
    locations: [{ path: resolve(session.cwd, String(args.path)) }],
    rawInput: args,
  };
  await client.notify("session/update", { sessionId, update: { sessionUpdate: "tool_call", ...toolCall } });
  const answer = await client.request("session/request_permission", {
    sessionId,
    toolCall,
    options: [
      { kind: "allow_once", name: "Allow this change", optionId: "allow" },
      { kind: "reject_once", name: "Skip this change", optionId: "reject" },
    ],
  });
  if (answer.outcome.outcome === "cancelled") return null;
  if (answer.outcome.optionId !== "allow") {
    await client.notify("session/update", {
      sessionId,
      update: { sessionUpdate: "tool_call_update", toolCallId: call.id, status: "failed" },
    });
    return "The user refused permission to write the file.";
  }
  await writeFile(resolve(session.cwd, String(args.path)), String(args.content));
  await client.notify("session/update", {
    sessionId,
    update: { sessionUpdate: "tool_call_update", toolCallId: call.id, status: "completed" },
  });
  return `Wrote ${args.path}.`;
}

async function prompt({ params, client }) {
  const session = sessions.get(params.sessionId);
  if (!session) throw new Error(`unknown session ${params.sessionId}`);
  session.abort?.abort();
  const abort = (session.abort = new AbortController());
  const text = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join("\n");
  session.messages.push({ role: "user", content: text });
  const onText = (t) =>
    client.notify("session/update", {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } },
    });
  try {
    for (let step = 0; step < 8; step++) {
      const msg = await completion(session.messages, abort.signal, onText);
      session.messages.push(msg);
      if (!msg.tool_calls) return { stopReason: "end_turn" };
      for (const call of msg.tool_calls) {
        const result = await runTool(client, params.sessionId, session, call);
        if (result === null || abort.signal.aborted) return { stopReason: "cancelled" };
        session.messages.push({ role: "tool", tool_call_id: call.id, content: result });
      }
    }
    return { stopReason: "max_turn_requests" };
  } catch (err) {
    if (abort.signal.aborted) return { stopReason: "cancelled" };
    throw err;
  } finally {
    if (session.abort === abort) session.abort = null;
  }
}

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = acp
  .agent()
  .onRequest("initialize", () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "sdk-agent", version: "1" },
    authMethods: [],
  }))
  .onRequest("session/new", ({ params }) => {
    const sessionId = crypto.randomUUID();
    sessions.set(sessionId, { cwd: params.cwd, messages: [], abort: null });
    return { sessionId };
  })
  .onRequest("session/prompt", prompt)
  .onNotification("session/cancel", ({ params }) => {
    sessions.get(params.sessionId)?.abort?.abort();
  })
  .connect(stream);
await connection.closed;
