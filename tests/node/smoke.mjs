#!/usr/bin/env node
// Smoke test of `membank serve` the way the writing app uses it: plain Node, no packages.
//
//   node tests/node/smoke.mjs
//
// It copies fixtures/sample-project to a temporary folder, spawns the sidecar with a temporary
// global bank (WRITENOW_HOME), opens the project, creates a memory, edits its file on disk the way
// an editor saves, waits for the `index:changed` notification, and checks the injection preview.
// The command defaults to the repository's .venv/bin/membank, else `membank` on PATH; set
// MEMBANK_CMD to a JSON array to choose another (e.g. ["python3", "-m", "membank.cli"]).
// Exit 0 when every check passes, 1 otherwise.

import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const DEADLINE_MS = Number(process.env.MEMBANK_SMOKE_DEADLINE_MS || 60000);

function membankCommand() {
  if (process.env.MEMBANK_CMD) return JSON.parse(process.env.MEMBANK_CMD);
  const venv = join(REPO, ".venv", process.platform === "win32" ? "Scripts/membank.exe" : "bin/membank");
  return [existsSync(venv) ? venv : "membank"];
}

/** A JSON-RPC client over the child's stdio: one JSON object per line each way. */
class Sidecar {
  constructor(command, args, env) {
    this.child = spawn(command[0], [...command.slice(1), ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = new Set();
    this.stderr = "";
    this.exited = new Promise((done) => this.child.on("exit", (code, signal) => done({ code, signal })));
    this.child.on("error", (error) => { this.spawnError = error; });
    this.child.stderr.on("data", (chunk) => { this.stderr += chunk; });
    createInterface({ input: this.child.stdout }).on("line", (line) => this.onLine(line));
  }

  onLine(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      throw new Error(`stdout carried a line that is not JSON: ${line.slice(0, 200)}`);
    }
    if (message.jsonrpc !== "2.0") throw new Error(`not a JSON-RPC 2.0 message: ${line.slice(0, 200)}`);
    if ("method" in message) {
      for (const listener of this.listeners) listener(message);
    } else if (this.pending.has(message.id)) {
      this.pending.get(message.id)(message);
      this.pending.delete(message.id);
    }
  }

  /** The reply to one request: {result} or {error}. */
  request(method, params) {
    const id = this.nextId++;
    const reply = new Promise((done) => this.pending.set(id, done));
    this.child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    return withDeadline(reply, `the reply to ${method}`);
  }

  /** A channel's data; fails on an error envelope. */
  async call(method, params = {}) {
    const reply = await this.request(method, params);
    if (!reply.result) throw new Error(`${method}: JSON-RPC error ${JSON.stringify(reply.error)}`);
    if (!reply.result.ok) throw new Error(`${method}: ${JSON.stringify(reply.result.error)}`);
    return reply.result.data;
  }

  /** The first notification `method` that `test` accepts (notifications seen earlier are not kept). */
  waitFor(method, test) {
    let listener;
    const seen = new Promise((done) => {
      listener = (message) => { if (message.method === method && test(message.params)) done(message.params); };
      this.listeners.add(listener);
    });
    return withDeadline(seen, `the notification ${method}`).finally(() => this.listeners.delete(listener));
  }

  async close() {
    this.child.stdin.end();
    return withDeadline(this.exited, "the sidecar to exit");
  }
}

function withDeadline(promise, what) {
  let timer;
  const late = new Promise((_, fail) => {
    timer = setTimeout(() => fail(new Error(`no ${what} within ${DEADLINE_MS} ms`)), DEADLINE_MS);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`);
  console.log(`ok - ${what}`);
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), "membank-smoke-"));
  const project = join(work, "novel");
  cpSync(join(REPO, "fixtures", "sample-project"), project, {
    recursive: true,
    filter: (source) => !source.split(/[\\/]/).includes(".index"),
  });
  const env = { ...process.env, WRITENOW_HOME: process.env.WRITENOW_HOME || join(work, "global-bank") };
  const sidecar = new Sidecar(membankCommand(), ["serve"], env);
  try {
    const opened = await sidecar.call("project:open", { path: project });
    check(opened.projectId && opened.root === "novel", "project:open names the project, never its absolute path");

    const status = await sidecar.call("index:status", { projectId: opened.projectId });
    check(status.counts.memories > 0, `index:status counts ${status.counts.memories} memories`);

    const memory = await sidecar.call("memory:create", {
      projectId: opened.projectId, type: "preference", scope: "project",
      content: "Let the sea speak first in every chapter.", tags: ["style"],
    });
    check(memory.id && memory.revision === 1 && memory.source.startsWith(".writenow/"), `memory:create wrote ${memory.source}`);

    // the writer edits the file in their editor: write a temporary file, then rename it over the original
    const changed = sidecar.waitFor("index:changed", (p) => p.projectId === opened.projectId && p.sources.includes(memory.source));
    const file = join(project, ...memory.source.split("/"));
    const text = readFileSync(file, "utf8").replace("Let the sea speak first", "Let the tide speak first");
    writeFileSync(file + ".tmp", text);
    renameSync(file + ".tmp", file);
    const note = await changed;
    check(note.sources.includes(memory.source), "index:changed announced the edited file");

    const preview = await sidecar.call("memory:injection:preview", { projectId: opened.projectId });
    const item = preview.items.find((i) => i.id === memory.id);
    check(item && item.content === "Let the tide speak first in every chapter.", "the preview shows the edited text");
    check(item.source === memory.source && preview.mode === "deterministic", "the preview cites the file");

    const got = await sidecar.call("memory:get", { projectId: opened.projectId, id: memory.id });
    check(got.content === item.content, "memory:get agrees with the preview");

    // the app asks for a prompt twice, with different selections: the cached prefix does not move
    const first = await sidecar.call("context:assemble", { projectId: opened.projectId, skillId: "continue",
      documentId: "chapters/ch05.md", selection: { start: 0, end: 40 }, instruction: "Continue." });
    const second = await sidecar.call("context:assemble", { projectId: opened.projectId, skillId: "continue",
      documentId: "chapters/ch05.md", selection: { text: "He drew. Steel rang." } });
    check(first.blocks.length === 6 && first.systemPrompt === first.blocks.slice(0, 4).map((b) => b.text).join(""),
      "context:assemble returns six blocks, the first four making the systemPrompt");
    check(first.stablePrefixHash === second.stablePrefixHash && first.userContent !== second.userContent,
      "the prefix hash holds while the selection moves");
    check(first.systemPrompt.includes("Let the tide speak first in every chapter."), "the edited preference is in Layer 3");
    check(second.items.some((i) => i.kind === "card" && i.source === ".writenow/characters/lin-mo.md"),
      "a card mentioned in the text is in Layer 4, cited");

    // the writer accepts the second run's output after a light edit: one call, then the trace shows it
    const feedback = await sidecar.call("ai:skill:feedback", { projectId: opened.projectId, runId: second.runId,
      action: "accept", editDistance: 0.15, sceneType: "action", evidenceRef: "short sentences in a fight" });
    check(feedback.signal.name === "LIGHT_EDIT" && feedback.signal.weight === 0.45 && feedback.episode.source.startsWith(".writenow/journal/"),
      "ai:skill:feedback records the episode with its implicit signal (LIGHT_EDIT +0.45)");
    const trace = await sidecar.call("memory:trace:get", { projectId: opened.projectId, runId: second.runId });
    check(trace.pieces.some((p) => p.kind === "card") && trace.feedback.some((f) => f.kind === "skill" && f.episodeId === feedback.episode.id),
      "memory:trace:get shows what the prompt held and the feedback on it");

    const unknown = await sidecar.request("memory:nothing", {});
    check(unknown.error && unknown.error.code === -32601, "an unknown method is a JSON-RPC error -32601");
    const wrong = await sidecar.request("memory:create", { type: "note", scope: "project" });
    check(wrong.result && wrong.result.error.code === "INVALID_ARGUMENT" && wrong.result.error.details.field === "content",
      "a missing field is an INVALID_ARGUMENT envelope naming it");

    const { code } = await sidecar.close();
    check(code === 0, "closing stdin stops the sidecar with exit code 0");
  } catch (error) {
    if (sidecar.spawnError) console.error(`could not start membank: ${sidecar.spawnError.message}`);
    console.error(`not ok - ${error.message}`);
    if (sidecar.stderr) console.error(`--- membank stderr ---\n${sidecar.stderr.slice(-4000)}`);
    sidecar.child.kill();
    process.exitCode = 1;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
