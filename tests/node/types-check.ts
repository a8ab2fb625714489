// Type-checks docs/types/membank.d.ts the way the desktop app uses it; never run, only compiled:
//
//   tests/node/node_modules/.bin/tsc -p tests/node      (strict, no emit; tests/test_server_node.py runs it)
//
// Each `@ts-expect-error` line must fail to type-check (tsc reports an unused directive otherwise), so
// the check cannot pass with types that accept anything.

import type {
  Call, ChannelData, ChannelName, ChannelPayload, Channels, Envelope, ErrorCode, MemoryCreateData,
  MemoryCreatePayload, NotificationName, Notifications,
} from "../../docs/types/membank";

declare const call: Call;
declare const console: { log(...values: unknown[]): void };  // no DOM or Node types here

/** The app's handler for the server's notifications, typed by method. */
function onNotification<K extends NotificationName>(method: K, params: Notifications[K]): string {
  return `${method} for ${params.projectId}`;
}

function failed(envelope: Envelope): ErrorCode | null {
  return envelope.ok ? null : envelope.error.code;
}

async function session(): Promise<void> {
  const opened = await call("project:open", { path: "/home/writer/novel" });
  if (!opened.ok) {
    const code: ErrorCode = opened.error.code;
    const field: unknown = opened.error.details?.["field"];
    console.log(code, opened.error.message, field);
    return;
  }
  const projectId: string = opened.data.projectId;

  const payload: MemoryCreatePayload = { projectId, type: "preference", scope: "project", content: "Short sentences.", tags: ["style"] };
  const created = await call("memory:create", payload);
  if (created.ok) {
    const memory: MemoryCreateData = created.data;
    const revision: number = memory.revision;
    const documentId: string | null = memory.documentId;
    console.log(revision, documentId, memory.scope === "global");

    // a patch: null clears a field
    const updated = await call("memory:update", { projectId, id: memory.id, patch: { documentId: null, tags: ["style"] } });
    if (updated.ok) console.log(updated.data.revision);
  }

  const preview = await call("memory:injection:preview", { projectId, queryText: "is the hero injured?" });
  if (preview.ok) {
    const mode: "deterministic" | "semantic" = preview.data.mode;
    for (const item of preview.data.items) console.log(mode, item.id, item.source, item.tokens);
  }

  const assembled = await call("context:assemble", { projectId, skillId: "continue", selection: { start: 0, end: 40 }, deadlineMs: 5000 });
  if (assembled.ok) console.log(assembled.data.systemPrompt.length, assembled.data.stablePrefixHash);

  console.log(onNotification("index:changed", { projectId, sources: [".writenow/memories/a.md"], diagnostics: [], fixed: [], diagnosticsTotal: 0, fixedTotal: 0 }));
  console.log(failed(assembled));

  // @ts-expect-error: memory:create has no field `colour` (payloads refuse unknown fields)
  await call("memory:create", { projectId, type: "note", scope: "project", content: "x", colour: "red" });
  // @ts-expect-error: `scope` is one of project, document, global
  await call("memory:create", { projectId, type: "note", scope: "planet", content: "x" });
  // @ts-expect-error: `content` is required
  await call("memory:create", { projectId, type: "note", scope: "project" });
  // @ts-expect-error: no such channel
  await call("memory:nothing", {});
  // @ts-expect-error: index:changed carries `sources`, a list of strings
  onNotification("index:changed", { projectId, sources: "a.md" });
  if (opened.ok) {
    // @ts-expect-error: project:open answers `root`, not `rootPath`
    console.log(opened.data.rootPath);
  }
}

// -- every channel and notification is typed: none is `any` -------------------------------------------

type IsAny<T> = 0 extends 1 & T ? true : false;
type AnyChannel = { [K in ChannelName]: IsAny<ChannelPayload<K>> extends true ? K : IsAny<ChannelData<K>> extends true ? K : never }[ChannelName];
type AnyNotification = { [K in NotificationName]: IsAny<Notifications[K]> extends true ? K : never }[NotificationName];
const noAnyChannel: [AnyChannel] extends [never] ? true : false = true;
const noAnyNotification: [AnyNotification] extends [never] ? true : false = true;
const channelsKnown: keyof Channels extends string ? true : false = true;

export { session, noAnyChannel, noAnyNotification, channelsKnown };
