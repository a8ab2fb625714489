// membank sidecar: TypeScript declarations for every channel's payload and data, the envelope and the
// notifications. Generated from the JSON Schemas in docs/schema/; do not edit. Regenerate with
//   python -m membank.shells.typescript
// (`python -m membank.shells.typescript --check` exits 1 when this file is out of date; CI runs it).

// -- the envelope ------------------------------------------------------------------------------------------

/** The stable error codes of a failed envelope (`error.code`); the message is for logs. */
export type ErrorCode = "CANCELED" | "CONFLICT" | "DB_ERROR" | "INTERNAL" | "INVALID_ARGUMENT" | "MEMORY_CAPACITY_EXCEEDED" | "MEMORY_EPISODE_WRITE_FAILED" | "NOT_FOUND" | "TIMEOUT";

export interface ErrorInfo {
  code: ErrorCode;
  message: string;
  details?: { [key: string]: unknown };
}

/** A successful envelope: `data` is the channel's data. */
export interface Success<D = unknown> {
  ok: true;
  data: D;
}

/** A failed envelope. */
export interface Failure {
  ok: false;
  error: ErrorInfo;
}

/** What every channel returns (the JSON-RPC `result`): ok with data, or not ok with an error whose code is stable. */
export type Envelope<D = unknown> = Success<D> | Failure;

// -- the channels ------------------------------------------------------------------------------------------

/** Every channel by method name: what it takes (`payload`, the JSON-RPC params) and what its
 * successful envelope carries (`data`). */
export interface Channels {
  /** Schema: docs/schema/ai.skill.feedback.json */
  "ai:skill:feedback": { payload: AiSkillFeedbackPayload; data: AiSkillFeedbackData };
  /** Schema: docs/schema/capture.pending.json */
  "capture:pending": { payload: CapturePendingPayload; data: CapturePendingData };
  /** Schema: docs/schema/capture.prepare.json */
  "capture:prepare": { payload: CapturePreparePayload; data: CapturePrepareData };
  /** Schema: docs/schema/capture.propose.json */
  "capture:propose": { payload: CaptureProposePayload; data: CaptureProposeData };
  /** Schema: docs/schema/capture.review.json */
  "capture:review": { payload: CaptureReviewPayload; data: CaptureReviewData };
  /** Schema: docs/schema/capture.status.json */
  "capture:status": { payload: CaptureStatusPayload; data: CaptureStatusData };
  /** Schema: docs/schema/card.export.json */
  "card:export": { payload: CardExportPayload; data: CardExportData };
  /** Schema: docs/schema/card.import.json */
  "card:import": { payload: CardImportPayload; data: CardImportData };
  /**
   * Cancellable: `deadlineMs` bounds the call, and `$/cancelRequest` stops it halfway (CANCELED, TIMEOUT; nothing is left half-done).
   * Schema: docs/schema/context.assemble.json
   */
  "context:assemble": { payload: ContextAssemblePayload; data: ContextAssembleData };
  /** Schema: docs/schema/context.settings.update.json */
  "context:settings:update": { payload: ContextSettingsUpdatePayload; data: ContextSettingsUpdateData };
  /** Schema: docs/schema/embedding.settings.update.json */
  "embedding:settings:update": { payload: EmbeddingSettingsUpdatePayload; data: EmbeddingSettingsUpdateData };
  /** Schema: docs/schema/index.diagnostics.json */
  "index:diagnostics": { payload: IndexDiagnosticsPayload; data: IndexDiagnosticsData };
  /** Schema: docs/schema/index.status.json */
  "index:status": { payload: IndexStatusPayload; data: IndexStatusData };
  /**
   * Cancellable: `deadlineMs` bounds the call, and `$/cancelRequest` stops it halfway (CANCELED, TIMEOUT; nothing is left half-done).
   * Schema: docs/schema/index.sync.json
   */
  "index:sync": { payload: IndexSyncPayload; data: IndexSyncData };
  /** Schema: docs/schema/kg.appearances.json */
  "kg:appearances": { payload: KgAppearancesPayload; data: KgAppearancesData };
  /**
   * Cancellable: `deadlineMs` bounds the call, and `$/cancelRequest` stops it halfway (CANCELED, TIMEOUT; nothing is left half-done).
   * Schema: docs/schema/kg.consistency.check.json
   */
  "kg:consistency:check": { payload: KgConsistencyCheckPayload; data: KgConsistencyCheckData };
  /** Schema: docs/schema/kg.entity.get.json */
  "kg:entity:get": { payload: KgEntityGetPayload; data: KgEntityGetData };
  /** Schema: docs/schema/kg.entity.list.json */
  "kg:entity:list": { payload: KgEntityListPayload; data: KgEntityListData };
  /** Schema: docs/schema/kg.mentions.json */
  "kg:mentions": { payload: KgMentionsPayload; data: KgMentionsData };
  /** Schema: docs/schema/kg.relations.json */
  "kg:relations": { payload: KgRelationsPayload; data: KgRelationsData };
  /** Schema: docs/schema/kg.state.json */
  "kg:state": { payload: KgStatePayload; data: KgStateData };
  /** Schema: docs/schema/kg.state.update.json */
  "kg:state:update": { payload: KgStateUpdatePayload; data: KgStateUpdateData };
  /** Schema: docs/schema/lifecycle.settings.update.json */
  "lifecycle:settings:update": { payload: LifecycleSettingsUpdatePayload; data: LifecycleSettingsUpdateData };
  /** Schema: docs/schema/manuscript.search.json */
  "manuscript:search": { payload: ManuscriptSearchPayload; data: ManuscriptSearchData };
  /** Schema: docs/schema/manuscript.status.json */
  "manuscript:status": { payload: ManuscriptStatusPayload; data: ManuscriptStatusData };
  /** Schema: docs/schema/memory.create.json */
  "memory:create": { payload: MemoryCreatePayload; data: MemoryCreateData };
  /** Schema: docs/schema/memory.delete.json */
  "memory:delete": { payload: MemoryDeletePayload; data: MemoryDeleteData };
  /**
   * Cancellable: `deadlineMs` bounds the call, and `$/cancelRequest` stops it halfway (CANCELED, TIMEOUT; nothing is left half-done).
   * Schema: docs/schema/memory.episode.query.json
   */
  "memory:episode:query": { payload: MemoryEpisodeQueryPayload; data: MemoryEpisodeQueryData };
  /** Schema: docs/schema/memory.episode.record.json */
  "memory:episode:record": { payload: MemoryEpisodeRecordPayload; data: MemoryEpisodeRecordData };
  /** Schema: docs/schema/memory.get.json */
  "memory:get": { payload: MemoryGetPayload; data: MemoryGetData };
  /** Schema: docs/schema/memory.injection.preview.json */
  "memory:injection:preview": { payload: MemoryInjectionPreviewPayload; data: MemoryInjectionPreviewData };
  /** Schema: docs/schema/memory.lifecycle.run.json */
  "memory:lifecycle:run": { payload: MemoryLifecycleRunPayload; data: MemoryLifecycleRunData };
  /** Schema: docs/schema/memory.list.json */
  "memory:list": { payload: MemoryListPayload; data: MemoryListData };
  /** Schema: docs/schema/memory.preferences.clear.json */
  "memory:preferences:clear": { payload: MemoryPreferencesClearPayload; data: MemoryPreferencesClearData };
  /** Schema: docs/schema/memory.preferences.ingest.json */
  "memory:preferences:ingest": { payload: MemoryPreferencesIngestPayload; data: MemoryPreferencesIngestData };
  /** Schema: docs/schema/memory.restore.json */
  "memory:restore": { payload: MemoryRestorePayload; data: MemoryRestoreData };
  /** Schema: docs/schema/memory.session.end.json */
  "memory:session:end": { payload: MemorySessionEndPayload; data: MemorySessionEndData };
  /** Schema: docs/schema/memory.settings.get.json */
  "memory:settings:get": { payload: MemorySettingsGetPayload; data: MemorySettingsGetData };
  /** Schema: docs/schema/memory.settings.update.json */
  "memory:settings:update": { payload: MemorySettingsUpdatePayload; data: MemorySettingsUpdateData };
  /** Schema: docs/schema/memory.trace.feedback.json */
  "memory:trace:feedback": { payload: MemoryTraceFeedbackPayload; data: MemoryTraceFeedbackData };
  /** Schema: docs/schema/memory.trace.get.json */
  "memory:trace:get": { payload: MemoryTraceGetPayload; data: MemoryTraceGetData };
  /** Schema: docs/schema/memory.update.json */
  "memory:update": { payload: MemoryUpdatePayload; data: MemoryUpdateData };
  /** Schema: docs/schema/memory.working.add.json */
  "memory:working:add": { payload: MemoryWorkingAddPayload; data: MemoryWorkingAddData };
  /** Schema: docs/schema/memory.working.list.json */
  "memory:working:list": { payload: MemoryWorkingListPayload; data: MemoryWorkingListData };
  /** Schema: docs/schema/project.git.setup.json */
  "project:git:setup": { payload: ProjectGitSetupPayload; data: ProjectGitSetupData };
  /** Schema: docs/schema/project.init.json */
  "project:init": { payload: ProjectInitPayload; data: ProjectInitData };
  /** Schema: docs/schema/project.open.json */
  "project:open": { payload: ProjectOpenPayload; data: ProjectOpenData };
  /** Schema: docs/schema/skill.get.json */
  "skill:get": { payload: SkillGetPayload; data: SkillGetData };
  /** Schema: docs/schema/skill.list.json */
  "skill:list": { payload: SkillListPayload; data: SkillListData };
  /** Schema: docs/schema/story.duplicates.json */
  "story:duplicates": { payload: StoryDuplicatesPayload; data: StoryDuplicatesData };
  /** Schema: docs/schema/story.reader.json */
  "story:reader": { payload: StoryReaderPayload; data: StoryReaderData };
  /** Schema: docs/schema/story.scene.json */
  "story:scene": { payload: StoryScenePayload; data: StorySceneData };
  /** Schema: docs/schema/story.threads.json */
  "story:threads": { payload: StoryThreadsPayload; data: StoryThreadsData };
  /** Schema: docs/schema/summary.list.json */
  "summary:list": { payload: SummaryListPayload; data: SummaryListData };
  /** Schema: docs/schema/summary.put.json */
  "summary:put": { payload: SummaryPutPayload; data: SummaryPutData };
}

export type ChannelName = keyof Channels;
export type ChannelPayload<K extends ChannelName> = Channels[K]["payload"];
export type ChannelData<K extends ChannelName> = Channels[K]["data"];

/** A typed call, as an app's JSON-RPC client offers it: the reply's `result` is the envelope. */
export type Call = <K extends ChannelName>(method: K, params: ChannelPayload<K>) => Promise<Envelope<ChannelData<K>>>;

/** The server's notifications (JSON-RPC messages without an `id`) by method name: their params. */
export interface Notifications {
  /** Schema: docs/schema/chapter.changed.json */
  "chapter:changed": ChapterChangedParams;
  /** Schema: docs/schema/episode.failed.json */
  "episode:failed": EpisodeFailedParams;
  /** Schema: docs/schema/index.changed.json */
  "index:changed": IndexChangedParams;
  /** Schema: docs/schema/index.strong.json */
  "index:strong": IndexStrongParams;
}

export type NotificationName = keyof Notifications;
export type NotificationParams<K extends NotificationName> = Notifications[K];

export type AiSkillFeedbackPayload = SkillFeedback;
export type AiSkillFeedbackData = SkillFeedbackOut;
export type CapturePendingPayload = CapturePending;
export type CapturePendingData = Pending;
export type CapturePreparePayload = CapturePrepare;
export type CapturePrepareData = Prepared;
export type CaptureProposePayload = CapturePropose;
export type CaptureProposeData = Proposed;
export type CaptureReviewPayload = CaptureReview;
export type CaptureReviewData = Reviewed;
export type CaptureStatusPayload = ProjectOnly;
export type CaptureStatusData = CaptureStatus;
export type CardExportPayload = CardExport;
export type CardExportData = ExportOut;
export type CardImportPayload = CardImport;
export type CardImportData = ImportOut;
export type ContextAssemblePayload = ContextAssemble;
export type ContextAssembleData = Assembled;
export type ContextSettingsUpdatePayload = ContextUpdate;
export type ContextSettingsUpdateData = ContextSettings;
export type EmbeddingSettingsUpdatePayload = EmbeddingUpdate;
export type EmbeddingSettingsUpdateData = EmbeddingSettings;
export type IndexDiagnosticsPayload = ProjectOnly;
export type IndexDiagnosticsData = DiagnosticList;
export type IndexStatusPayload = ProjectOnly;
export type IndexStatusData = IndexStatus;
export type IndexSyncPayload = IndexSync;
export type IndexSyncData = SyncReport;
export type KgAppearancesPayload = AppearancesGet;
export type KgAppearancesData = Appearances;
export type KgConsistencyCheckPayload = ConsistencyCheck;
export type KgConsistencyCheckData = Checked;
export type KgEntityGetPayload = EntityGet;
export type KgEntityGetData = Entity;
export type KgEntityListPayload = EntityList;
export type KgEntityListData = Entities;
export type KgMentionsPayload = MentionsGet;
export type KgMentionsData = Mentions;
export type KgRelationsPayload = RelationsGet;
export type KgRelationsData = Edges;
export type KgStatePayload = StateGet;
export type KgStateData = State;
export type KgStateUpdatePayload = StateUpdate;
export type KgStateUpdateData = Entity;
export type LifecycleSettingsUpdatePayload = LifecycleUpdate;
export type LifecycleSettingsUpdateData = LifecycleSettings;
export type ManuscriptSearchPayload = ManuscriptSearch;
export type ManuscriptSearchData = PassageItems;
export type ManuscriptStatusPayload = ProjectOnly;
export type ManuscriptStatusData = ManuscriptStatus;
export type MemoryCreatePayload = MemoryCreate;
export type MemoryCreateData = Memory;
export type MemoryDeletePayload = MemoryRef;
export type MemoryDeleteData = MemoryDeleted;
export type MemoryEpisodeQueryPayload = EpisodeQuery;
export type MemoryEpisodeQueryData = EpisodeItems;
export type MemoryEpisodeRecordPayload = EpisodeRecord;
export type MemoryEpisodeRecordData = Recorded;
export type MemoryGetPayload = MemoryRef;
export type MemoryGetData = Memory;
export type MemoryInjectionPreviewPayload = InjectionPreview;
export type MemoryInjectionPreviewData = Preview;
export type MemoryLifecycleRunPayload = LifecycleRun;
export type MemoryLifecycleRunData = LifecycleReport;
export type MemoryListPayload = MemoryList;
export type MemoryListData = MemoryItems;
export type MemoryPreferencesClearPayload = ProjectOnly;
export type MemoryPreferencesClearData = PreferencesCleared;
export type MemoryPreferencesIngestPayload = PreferencesIngest;
export type MemoryPreferencesIngestData = PreferencesIngested;
export type MemoryRestorePayload = MemoryRef;
export type MemoryRestoreData = Memory;
export type MemorySessionEndPayload = WorkingSession;
export type MemorySessionEndData = SessionEnded;
export type MemorySettingsGetPayload = ProjectOnly;
export type MemorySettingsGetData = Settings;
export type MemorySettingsUpdatePayload = SettingsUpdate;
export type MemorySettingsUpdateData = Settings;
export type MemoryTraceFeedbackPayload = TraceFeedback;
export type MemoryTraceFeedbackData = Verdict;
export type MemoryTraceGetPayload = TraceGet;
export type MemoryTraceGetData = Trace;
export type MemoryUpdatePayload = MemoryUpdate;
export type MemoryUpdateData = Memory;
export type MemoryWorkingAddPayload = WorkingAdd;
export type MemoryWorkingAddData = WorkingAdded;
export type MemoryWorkingListPayload = WorkingSession;
export type MemoryWorkingListData = WorkingList;
export type ProjectGitSetupPayload = ProjectOnly;
export type ProjectGitSetupData = GitSetup;
export type ProjectInitPayload = ProjectInit;
export type ProjectInitData = ProjectCreated;
export type ProjectOpenPayload = ProjectOpen;
export type ProjectOpenData = ProjectOpened;
export type SkillGetPayload = SkillRef;
export type SkillGetData = Skill;
export type SkillListPayload = ProjectOnly;
export type SkillListData = SkillItems;
export type StoryDuplicatesPayload = ProjectOnly;
export type StoryDuplicatesData = Duplicates;
export type StoryReaderPayload = ReaderGet;
export type StoryReaderData = Reader;
export type StoryScenePayload = SceneGet;
export type StorySceneData = Scene;
export type StoryThreadsPayload = ThreadsGet;
export type StoryThreadsData = Threads;
export type SummaryListPayload = SummaryList;
export type SummaryListData = SummaryItems;
export type SummaryPutPayload = SummaryPut;
export type SummaryPutData = SummaryItem;
export type ChapterChangedParams = ChapterChanged;
export type EpisodeFailedParams = EpisodeFailed;
export type IndexChangedParams = IndexChanged;
export type IndexStrongParams = IndexStrong;

// -- the types the channels use ----------------------------------------------------------------------------

export interface Appearance {
  source: string;
  scene: string;
  count: number;
  firstLine: number;
  lastLine: number;
}

export interface Appearances {
  id: string;
  name: string;
  items: Appearance[];
  first: string | null;
  last: string | null;
  total: number;
}

export interface AppearancesGet {
  projectId?: string | null;
  id?: string | null;
  name?: string | null;
}

export interface Assembled {
  runId: string;
  skillId: string;
  systemPrompt: string;
  userContent: string;
  stablePrefixHash: string;
  blocks: Block[];
  cacheBreakpoints: number[];
  items: Item[];
  diagnostics: Diagnostics;
}

export interface Block {
  layer: number;
  name: "identity" | "skill" | "project" | "preferences" | "retrieved" | "immediate";
  text: string;
  tokens: number;
  hash: string;
}

export interface BookReport {
  target: string;
  name: string;
  scope: "character" | "project";
  entries: number;
  alwaysOn: number;
  alwaysOnTokens: number;
}

export interface CapturePending {
  documentId: string;
  projectId?: string | null;
}

export interface CapturePrepare {
  documentId: string;
  projectId?: string | null;
  documentText?: string | null;
}

export interface CapturePropose {
  documentId: string;
  chapterHash: string;
  ops: { [key: string]: unknown }[];
  projectId?: string | null;
  by?: string | null;
}

export interface CaptureReview {
  documentId: string;
  decisions?: Decision[] | null;
  projectId?: string | null;
}

export interface CaptureStatus {
  items: DocumentCapture[];
}

export interface CardExport {
  source: string;
  format: "json" | "png" | "charx";
  output: string;
  spec?: "v1" | "v2" | "v3" | null;
  /** @defaultValue false */
  force?: boolean;
  projectId?: string | null;
}

export interface CardImport {
  paths: string[];
  /** @defaultValue false */
  update?: boolean;
  projectId?: string | null;
}

export interface Change {
  source: string;
  change: "new" | "changed" | "same" | "kept";
  fields?: FieldChange[];
  fieldsTotal?: number;
}

/** Sent by the server after the watcher re-read a manuscript document whose passages changed (or that went, or cannot be read any more) (docs/manuscript.md). */
export interface ChapterChanged {
  projectId: string;
  documentId: string;
  capture: { [key: string]: unknown } | null;
}

export interface Checked {
  documentId: string;
  positionKnown: boolean;
  entities: Entity[];
  entitiesTotal: number;
  facts: Fact[];
  factsTotal: number;
  flags: Flag[];
  flagsTotal: number;
  skipped: Skip[];
  skippedTotal: number;
}

export interface Cited {
  value: unknown;
  source: string;
  line: number;
  at: string | null;
}

export interface ConsistencyCheck {
  documentId: string;
  projectId?: string | null;
  text?: string | null;
  deadlineMs?: number | null;
}

export interface ContextAssemble {
  skillId: string;
  projectId?: string | null;
  documentId?: string | null;
  documentText?: string | null;
  selection?: Selection | null;
  instruction?: string | null;
  queryText?: string | null;
  sessionId?: string | null;
  runId?: string | null;
  sceneType?: string | null;
  deadlineMs?: number | null;
}

export interface ContextAssembleReason {
  code: string;
  message: string;
}

/** context.md: `maxTokens` for Layers 2-5 when a skill sets none, `recursion` depth, and each layer's cap (`layerTokens`, key by key: the others stay as they are). */
export interface ContextPatch {
  maxTokens?: number | null;
  recursion?: number | null;
  layerTokens?: LayerTokensPatch | null;
}

export interface ContextSettings {
  maxTokens: number;
  recursion: number;
  layerTokens: LayerTokens;
}

export interface ContextUpdate {
  patch: ContextPatch;
  projectId?: string | null;
  /** @defaultValue "project" */
  scope?: "project" | "global";
}

export interface Decision {
  id: string;
  decision?: "accept" | "reject" | "patch" | null;
  action?: "accept" | "reject" | "patch" | null;
  patch?: { [key: string]: unknown } | null;
}

export interface DiagnosticCounts {
  errors: number;
  warnings: number;
}

export interface DiagnosticItem {
  source: string;
  line: number;
  severity: "error" | "warning";
  message: string;
  code?: string;
}

export interface DiagnosticList {
  items: DiagnosticItem[];
}

export interface Diagnostics {
  degraded: boolean;
  reasons: ContextAssembleReason[];
  dropped: Dropped[];
  hidden: number;
  hiddenDetail: Hidden;
  truncated: number;
  prefixTokens: number;
  prefixCacheable: boolean;
  hardCut: ("before" | "after")[];
  memoryDegraded: boolean;
  tookMs: number;
}

export interface DocumentCapture {
  documentId: string;
  state: string;
  pending: number;
  accepted: number;
  applied: number;
  rejected: number;
  stale: number;
  problems: { [key: string]: unknown }[];
}

export interface DocumentState {
  source: string;
  passages: number;
  scenes: string[];
  codePoints: number;
  characters: string[];
  problem: string | null;
  summary: "none" | "current" | "stale";
}

export interface Dropped {
  layer: number;
  kind: string;
  id: string | null;
  source: string | null;
  tokens: number;
  reason: string;
}

export interface Duplicate {
  kind: string;
  name: string | null;
  ids: string[];
  score: number | null;
  by: string;
  sources: Where[];
  message: string;
}

export interface Duplicates {
  items: Duplicate[];
  total: number;
}

export interface Edge {
  from: string;
  to: string | null;
  name: string;
  type: string;
  direction: string;
  since: string | null;
  until: string | null;
  note: string | null;
  source: string;
  line: number;
  depth: number;
}

export interface Edges {
  edges: Edge[];
  warnings?: string[];
}

/** `model`: a model2vec folder (relative to the project, or absolute); null is the bundled model. `strong`: the strong tier of vectors, `auto` (where it can run) or `off` (recall.md, Tiers). */
export interface EmbeddingPatch {
  model?: string | null;
  strong?: "auto" | "off" | boolean | null;
}

export interface EmbeddingSettings {
  model: string | null;
  strong: "auto" | "off" | null;
}

export interface EmbeddingUpdate {
  patch: EmbeddingPatch;
  projectId?: string | null;
  /** @defaultValue "project" */
  scope?: "project" | "global";
}

export interface Entities {
  items: Entity[];
  warnings?: string[];
}

export interface Entity {
  id?: string;
  name?: string;
  kind?: string;
  section?: string;
  aliases?: string[];
  summary?: string;
  source?: string;
  line?: number;
  introduced?: { [key: string]: unknown } | null;
  state?: Cited | null;
  facets?: { [key: string]: Cited };
  hidden?: number;
  progressions?: { [key: string]: unknown }[];
  relations?: Edge[];
  timeline?: string[];
  mentions?: { [key: string]: unknown }[];
  mentionsTotal?: number;
  lastSeen?: string | null;
  warnings?: string[];
}

export interface EntityGet {
  projectId?: string | null;
  id?: string | null;
  name?: string | null;
  at?: string | null;
}

export interface EntityList {
  projectId?: string | null;
  kind?: string | null;
  at?: string | null;
}

export interface Episode {
  id: string;
  projectId: string | null;
  runId: string | null;
  chapterId: string | null;
  sceneType: string | null;
  skillUsed: string | null;
  action: string | null;
  selectedIndex: number | null;
  candidates: number | null;
  editDistance: number | null;
  implicitSignal: string | null;
  signalWeight: number;
  importance: number;
  recallCount: number;
  lastRecalledAt: string | null;
  compressed: boolean;
  pinned: boolean;
  createdAt: string;
  undoneAt: string | null;
  summary: string | null;
  tags: string[];
  source: string;
  decay: number | null;
  level: "active" | "decaying" | "to_compress" | "to_evict" | null;
}

export interface EpisodeCounts {
  total: number;
  live: number;
  pending: number;
  failed: number;
}

/** Sent by the server when an episode accepted by `memory:episode:record` (without `wait`) could not be written after three tries (docs/episodes.md). */
export interface EpisodeFailed {
  projectId: string;
  id: string;
  code: "MEMORY_EPISODE_WRITE_FAILED" | "MEMORY_CAPACITY_EXCEEDED" | "INTERNAL";
  message: string;
}

export interface EpisodeItems {
  items: Ranked[];
  reasons: MemoryEpisodeQueryProblem[];
  memoryDegraded: boolean;
  defaultRules: string[];
}

export interface EpisodeLevels {
  active: number;
  decaying: number;
  to_compress: number;
  to_evict: number;
}

export interface EpisodeQuery {
  projectId?: string | null;
  sceneType?: string | null;
  queryText?: string | null;
  /** @defaultValue 5 */
  limit?: number;
  deadlineMs?: number | null;
}

export interface EpisodeRecord {
  projectId?: string | null;
  runId?: string | null;
  chapterId?: string | null;
  sceneType?: string | null;
  skillUsed?: string | null;
  /** @defaultValue "accept" */
  action?: "accept" | "partial" | "reject";
  selectedIndex?: number | null;
  candidates?: number | null;
  editDistance?: number | null;
  implicitSignal?: "DIRECT_ACCEPT" | "LIGHT_EDIT" | "EDITED_ACCEPT" | "HEAVY_REWRITE" | "FULL_REJECT" | "UNDO_AFTER_ACCEPT" | "REPEATED_SCENE_SKILL" | null;
  signalWeight?: number | null;
  importance?: number | null;
  /** @defaultValue false */
  pinned?: boolean;
  summary?: string | null;
  tags?: string[] | null;
  /** @defaultValue false */
  wait?: boolean;
}

export interface ExportOut {
  source: string;
  kind: "card" | "lorebook";
  format: string;
  spec: string;
  output: string;
  bytes: number;
}

export interface Fact {
  id: string;
  content: string;
  source: string;
  scope: string;
  documentId: string | null;
  since: string | null;
  until: string | null;
  updatedAt: string;
  entities: string[];
}

export interface FieldChange {
  field: string;
  change: "changed" | "kept";
  mine?: unknown;
  theirs?: unknown;
}

export interface Flag {
  code: string;
  entity: string;
  message: string;
  evidence: { [key: string]: unknown }[];
}

export interface GitSetup {
  written: string[];
  inGit: boolean;
}

export interface Hidden {
  progressions: number;
  relations: number;
  memories: number;
}

export interface ImportOut {
  items: Imported[];
}

export interface Imported {
  file: string;
  kind: "card" | "lorebook";
  format: string;
  target: string;
  status: "created" | "unchanged" | "pending" | "updated";
  changes: Change[];
  changesTotal?: number;
  skipped: Skipped[];
  skippedTotal?: number;
  books: BookReport[];
  warnings: string[];
}

/** Sent by the server (a JSON-RPC notification) after the watcher re-indexed changed files. */
export interface IndexChanged {
  projectId: string;
  sources: string[];
  diagnostics: DiagnosticItem[];
  fixed: DiagnosticItem[];
  diagnosticsTotal: number;
  fixedTotal: number;
}

export interface IndexCounts {
  memories: number;
  deleted: number;
  tombstones: number;
  characters: number;
  world: number;
  skills: number;
}

export interface IndexStatus {
  projectId: string;
  name: string;
  counts: IndexCounts;
  lastSync: string | null;
  model: ModelStatus;
  diagnostics: DiagnosticCounts;
  episodes: EpisodeCounts;
  lifecycle: LifecycleStatus;
  watch: WatchStatus | null;
  strong: StrongStatus;
}

/** Sent by the server after each batch of strong vectors the background wrote, or failed to (docs/recall.md, Tiers). */
export interface IndexStrong {
  projectId: string;
  done: number;
  total: number;
  model: string;
  problem: string | null;
}

export interface IndexSync {
  projectId?: string | null;
  /** @defaultValue false */
  rebuild?: boolean;
  deadlineMs?: number | null;
}

export interface InjectionPreview {
  projectId?: string | null;
  queryText?: string | null;
  documentId?: string | null;
}

/** A review killed midway (a crash): the accepted ops its files hold, and those they do not. */
export interface Interrupted {
  applied: string[];
  notApplied: string[];
}

export interface Item {
  layer: number;
  kind: string;
  id: string | null;
  source: string | null;
  line?: number;
  tokens: number;
  reason: unknown;
  score?: number;
}

export interface KnownFact {
  id: string;
  content: string;
  source: string;
  revealed: string | null;
  keys: string[];
}

export interface LastRuns {
  realtime: string | null;
  daily: string | null;
  weekly: string | null;
  monthly: string | null;
}

export interface LayerTokens {
  identity: number;
  skill: number;
  project: number;
  preferences: number;
  retrieved: number;
  immediate: number;
}

export interface LayerTokensPatch {
  identity?: number | null;
  skill?: number | null;
  project?: number | null;
  preferences?: number | null;
  retrieved?: number | null;
  immediate?: number | null;
}

export interface Levels {
  active: number;
  decaying: number;
  to_compress: number;
  to_evict: number;
}

/** episodes.md, Lifecycle: the stores' capacities, the TTL of an unused episode, working memory. */
export interface LifecyclePatch {
  activeEpisodes?: number | null;
  compressedEpisodes?: number | null;
  semanticRules?: number | null;
  episodeTtlDays?: number | null;
  workingTokens?: number | null;
}

export interface LifecycleReport {
  trigger: string;
  at: string;
  changed: boolean;
  tookMs: number;
  warnings: string[];
  evicted?: number;
  ttl?: number;
  lru?: number;
  episodes?: number;
  moved?: number;
  levels?: Levels;
  compressed?: number;
  history?: string[];
  kept?: string[];
  runs?: number;
}

export interface LifecycleRun {
  trigger: "realtime" | "daily" | "weekly" | "monthly";
  projectId?: string | null;
}

export interface LifecycleSettings {
  activeEpisodes: number;
  compressedEpisodes: number;
  semanticRules: number;
  episodeTtlDays: number;
  workingTokens: number;
}

export interface LifecycleStatus {
  lastRun: LastRuns;
  levels: EpisodeLevels;
  warnings: string[];
}

export interface LifecycleUpdate {
  patch: LifecyclePatch;
  projectId?: string | null;
  /** @defaultValue "project" */
  scope?: "project" | "global";
}

export interface ManuscriptSearch {
  queryText: string;
  projectId?: string | null;
  before?: string | null;
  documentId?: string | null;
  /** @defaultValue 10 */
  limit?: number;
}

export interface ManuscriptStatus {
  items: DocumentState[];
  passages: number;
  embedded: number;
}

export interface Memory {
  id: string;
  type: string;
  scope: "project" | "document" | "global";
  origin: "manual" | "learned";
  content: string;
  source: string;
  documentId: string | null;
  tags: string[];
  confidence: number;
  evidence: unknown[];
  metadata: { [key: string]: unknown };
  pinned: boolean;
  revision: number;
  createdAt: string | null;
  updatedAt: string;
  deletedAt: string | null;
  since: string | null;
  until: string | null;
}

export interface MemoryCreate {
  type: string;
  scope: "project" | "document" | "global";
  content: string;
  projectId?: string | null;
  documentId?: string | null;
  tags?: string[] | null;
  confidence?: number | null;
  evidence?: unknown[] | null;
  metadata?: { [key: string]: unknown } | null;
  pinned?: boolean | null;
}

export interface MemoryDeleted {
  id: string;
  deletedAt: string;
}

export interface MemoryEpisodeQueryProblem {
  code: "EMPTY_QUERY" | "MODEL_UNAVAILABLE" | "QUERY_NOT_EMBEDDABLE" | "EMBEDDING_DIM_MISMATCH" | "RECALL_NOT_JOURNALED" | "MEMORY_DEGRADED";
  message: string;
}

export interface MemoryEpisodeQueryReason {
  rank: number;
  score: number;
  decay: number;
  level: "active" | "decaying" | "to_compress" | "to_evict";
  similarity: number | null;
  sceneMatch: boolean;
  detail: string;
}

export interface MemoryItems {
  items: Memory[];
}

export interface MemoryList {
  projectId?: string | null;
  scope?: "project" | "document" | "global" | null;
  type?: string | null;
  origin?: "manual" | "learned" | null;
  /** @defaultValue false */
  includeDeleted?: boolean;
}

export interface MemoryPatch {
  content?: string | null;
  type?: string | null;
  tags?: string[] | null;
  confidence?: number | null;
  evidence?: unknown[] | null;
  metadata?: { [key: string]: unknown } | null;
  pinned?: boolean | null;
  documentId?: string | null;
}

export interface MemoryRef {
  id: string;
  projectId?: string | null;
}

export interface MemoryUpdate {
  id: string;
  patch: MemoryPatch;
  projectId?: string | null;
  expectedRevision?: number | null;
}

export interface Mention {
  id: string;
  name: string;
  match: string;
  offset: number;
  length: number;
}

export interface Mentions {
  items: Mention[];
  total: number;
  skipped: Skip[];
  skippedTotal: number;
}

export interface MentionsGet {
  text: string;
  projectId?: string | null;
  documentId?: string | null;
}

export interface ModelStatus {
  name: string | null;
  dim: number | null;
  vocabulary: number | null;
  indexModel: string | null;
  indexDim: number | null;
  semantic: boolean;
  problem: ReasonInfo | null;
}

export interface OpResult {
  index: number;
  id: string;
  op: string;
  status: string;
  reason: string | null;
  message: string;
  flags: string[];
  notes: string[];
  line: number | null;
}

export interface Part {
  scene: string;
  line: number;
  endLine: number;
  prompt: string;
}

export interface PassageItem {
  source: string;
  scene: string;
  line: number;
  endLine: number;
  text: string;
  score: number;
  reason: string;
}

export interface PassageItems {
  items: PassageItem[];
  warnings?: string[];
}

export interface Pending {
  documentId: string;
  proposal: string;
  items: PendingOp[];
  interrupted?: Interrupted;
}

export interface PendingOp {
  id: string;
  op: string;
  status: string;
  fields: { [key: string]: unknown };
  evidence: string;
  where: string | null;
  flags: string[];
  notes: string[];
}

export interface Piece {
  layer: number | null;
  kind: string | null;
  id: string | null;
  source: string | null;
  tokens: number | null;
  score: number | null;
}

export interface PreferencesCleared {
  cleared: number;
}

export interface PreferencesIngest {
  runId: string;
  skillId: string;
  action: "accept" | "reject" | "partial";
  evidenceRef: string;
  projectId?: string | null;
  tags?: string[] | null;
}

export interface PreferencesIngested {
  ignored: boolean;
  reason?: "EVIDENCE_TOO_SHORT" | "LEARNING_DISABLED";
  signalKey: string;
  count: number;
  threshold: number;
  learned?: Memory;
}

export interface Prepared {
  documentId: string;
  chapterHash: string;
  at: string;
  prompt: string | null;
  parts: Part[];
  schema: { [key: string]: unknown };
  skill: string;
  entities: { [key: string]: unknown }[];
  threads: { [key: string]: unknown }[];
  facts: { [key: string]: unknown }[];
}

export interface Preview {
  items: PreviewItem[];
  cards: PreviewCard[];
  mode: "deterministic" | "semantic";
  diagnostics: PreviewDiagnostics;
  passages: PassageItem[];
}

/** A character or world entry the query finds: listed beside the memories, never injected by the preview (a card reaches a prompt by activation). */
export interface PreviewCard {
  kind: "character" | "world";
  id: string;
  name: string;
  type: string;
  summary: string;
  source: string;
  line: number | null;
  include: "always" | "auto" | "never";
  reason: PreviewReason;
}

export interface PreviewDiagnostics {
  degraded: boolean;
  reasons: ReasonInfo[];
  truncated: number;
  tokens: number;
  tookMs: number;
}

export interface PreviewItem {
  id: string;
  type: string;
  scope: "project" | "document" | "global";
  origin: "manual" | "learned";
  content: string;
  source: string;
  tokens: number;
  reason: PreviewReason;
}

export interface PreviewReason {
  mode: "deterministic" | "semantic";
  rank: number;
  detail: string;
  score?: PreviewScore;
}

export interface PreviewScore {
  fused: number;
  vector: number | null;
  vectorRank: number | null;
  lexical: number | null;
  lexicalRank: number | null;
  tier?: "static" | "strong";
}

export interface ProjectCreated {
  projectId: string;
  name: string;
  created: string[];
}

export interface ProjectInit {
  path: string;
  name?: string | null;
  /** @defaultValue false */
  bare?: boolean;
}

/** The payload of a channel that needs nothing but the project. */
export interface ProjectOnly {
  projectId?: string | null;
}

export interface ProjectOpen {
  path: string;
}

export interface ProjectOpened {
  projectId: string;
  name: string;
  root: string;
}

export interface Proposed {
  documentId: string;
  chapterHash: string;
  proposal: string;
  written: boolean;
  ops: OpResult[];
  counts: { [key: string]: number };
}

export interface Ranked {
  id: string;
  projectId: string | null;
  runId: string | null;
  chapterId: string | null;
  sceneType: string | null;
  skillUsed: string | null;
  action: string | null;
  selectedIndex: number | null;
  candidates: number | null;
  editDistance: number | null;
  implicitSignal: string | null;
  signalWeight: number;
  importance: number;
  recallCount: number;
  lastRecalledAt: string | null;
  compressed: boolean;
  pinned: boolean;
  createdAt: string;
  undoneAt: string | null;
  summary: string | null;
  tags: string[];
  source: string;
  decay: number | null;
  level: "active" | "decaying" | "to_compress" | "to_evict" | null;
  reason: MemoryEpisodeQueryReason;
}

export interface Reader {
  at: string;
  items: KnownFact[];
  total: number;
  warnings?: string[];
}

export interface ReaderGet {
  at: string;
  projectId?: string | null;
}

/** Why recall degraded (or injection is off): a stable code and a readable message. */
export interface ReasonInfo {
  code: "EMPTY_QUERY" | "VEC_UNAVAILABLE" | "MODEL_UNAVAILABLE" | "EMBEDDING_DIM_MISMATCH" | "QUERY_NOT_EMBEDDABLE" | "INJECTION_DISABLED" | "STRONG_VECTORS_PENDING";
  message: string;
}

export interface Recorded {
  accepted: boolean;
  id: string;
  episode?: Episode;
}

export interface RelationsGet {
  projectId?: string | null;
  id?: string | null;
  name?: string | null;
  at?: string | null;
  /** @defaultValue 1 */
  depth?: number;
}

export interface Reviewed {
  documentId: string;
  proposal: string;
  ops: { [key: string]: unknown }[];
  written: string[];
  counts: { [key: string]: number };
  resumed?: Interrupted;
}

export interface RuleProblem {
  field: string;
  message: string;
  line: number;
}

export interface Scene {
  at: string;
  state: { [key: string]: SceneValue };
  line: string;
  scene: SceneView | null;
  scenes: SceneView[];
  problems: StorySceneProblem[];
  warnings?: string[];
}

export interface SceneGet {
  at: string;
  projectId?: string | null;
}

export interface SceneValue {
  value: unknown;
  at: string;
  source: string;
  line: number;
}

export interface SceneView {
  title: string;
  line: number;
  source: string;
  values: { [key: string]: unknown };
}

/** Either `start`/`end` (code-point offsets into the document text) or `text` (the selected text). */
export interface Selection {
  start?: number | null;
  end?: number | null;
  text?: string | null;
}

export interface SessionEnded {
  sessionId: string;
  ended: boolean;
  archived: Episode[];
  dropped: number;
}

export interface Settings {
  injectionEnabled: boolean;
  preferenceLearningEnabled: boolean;
  privacyModeEnabled: boolean;
  preferenceLearningThreshold: number;
  injectionMaxItems: number;
  injectionTokenBudget: number;
}

export interface SettingsPatch {
  injectionEnabled?: boolean | null;
  preferenceLearningEnabled?: boolean | null;
  privacyModeEnabled?: boolean | null;
  preferenceLearningThreshold?: number | null;
  injectionMaxItems?: number | null;
  injectionTokenBudget?: number | null;
}

export interface SettingsUpdate {
  patch: SettingsPatch;
  projectId?: string | null;
  /** @defaultValue "project" */
  scope?: "project" | "global";
}

export interface SignalOut {
  name: string;
  weight: number;
  base: number;
  repeats: number;
  replaced: boolean;
}

export interface Skill {
  id: string;
  name: string;
  description: string;
  source: string;
  bank: string;
  contextRules: { [key: string]: unknown };
  rules: { [key: string]: unknown };
  valid: boolean;
  problems: RuleProblem[];
  content: string;
}

export interface SkillFeedback {
  runId: string;
  action: "accept" | "reject" | "partial" | "undo";
  projectId?: string | null;
  evidenceRef?: string | null;
  tags?: string[] | null;
  selectedIndex?: number | null;
  candidates?: number | null;
  editDistance?: number | null;
  sceneType?: string | null;
  summary?: string | null;
  chapterId?: string | null;
}

export interface SkillFeedbackOut {
  episode: Episode;
  signal: SignalOut;
  preference: PreferencesIngested | null;
}

export interface SkillItems {
  items: SkillSummary[];
}

export interface SkillRef {
  skillId: string;
  projectId?: string | null;
}

export interface SkillSummary {
  id: string;
  name: string;
  description: string;
  source: string;
  bank: string;
  contextRules: { [key: string]: unknown };
  rules: { [key: string]: unknown };
  valid: boolean;
  problems: RuleProblem[];
}

export interface Skip {
  id: string;
  key: string;
  reason: string;
  message: string;
}

export interface Skipped {
  name: string;
  reason: string;
}

export interface State {
  state: string | null;
  facets: { [key: string]: Cited };
  since: string | null;
  source: string | null;
  line: number | null;
  warnings?: string[];
}

export interface StateGet {
  at: string;
  projectId?: string | null;
  id?: string | null;
  name?: string | null;
}

export interface StateUpdate {
  at: string;
  projectId?: string | null;
  id?: string | null;
  name?: string | null;
  state?: string | null;
  set?: { [key: string]: unknown } | null;
  expectedRevision?: number | null;
}

export interface StorySceneProblem {
  source: string;
  line: number;
  message: string;
}

export interface StrongStatus {
  setting: "auto" | "off";
  state: "ready" | "filling" | "off" | "unavailable";
  problem: string | null;
  model: string | null;
  indexModel: string | null;
  done: number;
  total: number;
}

export interface SummaryItem {
  of: string;
  level: string;
  text: string;
  source: string;
  sourceHash: string | null;
  by: string | null;
  stale: boolean;
}

export interface SummaryItems {
  items: SummaryItem[];
}

export interface SummaryList {
  projectId?: string | null;
  before?: string | null;
}

export interface SummaryPut {
  of: string;
  level: string;
  text: string;
  projectId?: string | null;
  sourceHash?: string | null;
  by?: string | null;
}

export interface SyncReport {
  added: number;
  updated: number;
  removed: number;
  unchanged: number;
  errors: number;
  tookMs: number;
}

export interface ThreadItem {
  id?: string;
  title?: string;
  status?: string;
  opened?: string;
  resolved?: string;
  dropped?: string;
  keys?: string[];
  entities?: string[];
  note?: string;
  source?: string;
  line?: number;
}

export interface Threads {
  at: string | null;
  items: ThreadItem[];
  total: number;
  problems: StorySceneProblem[];
  warnings?: string[];
}

export interface ThreadsGet {
  projectId?: string | null;
  at?: string | null;
  status?: string | null;
}

export interface Trace {
  runId: string;
  at: string | null;
  source: string;
  skillId: string | null;
  documentId: string | null;
  stablePrefixHash: string | null;
  pieces: Piece[];
  feedback: TraceItem[];
}

export interface TraceFeedback {
  runId: string;
  verdict: "correct" | "incorrect";
  reason?: string | null;
  projectId?: string | null;
}

export interface TraceGet {
  runId: string;
  projectId?: string | null;
}

export interface TraceItem {
  kind: "verdict" | "skill" | "preference" | "episode" | "undo" | "update";
  at: string | null;
  source: string;
  verdict?: "correct" | "incorrect" | null;
  reason?: string | null;
  action?: string | null;
  signalKey?: string | null;
  ignored?: string | null;
  episodeId?: string | null;
  signal?: string | null;
  weight?: number | null;
}

export interface Verdict {
  runId: string;
  verdict: string;
  reason: string | null;
  at: string;
  source: string;
}

export interface WatchStatus {
  mode: "native" | "polling";
  running: boolean;
  note: string | null;
  lastChange: string | null;
}

export interface Where {
  source: string;
  line: number;
}

export interface WorkingAdd {
  sessionId: string;
  kind: string;
  content: string;
  importance: number;
  focus?: string | null;
  projectId?: string | null;
}

export interface WorkingAdded {
  entry: WorkingEntry;
  evicted: WorkingEntry[];
  tokens: number;
  capTokens: number;
  relation: "semantic" | "words" | null;
}

export interface WorkingEntry {
  id: string;
  projectId: string;
  sessionId: string;
  kind: string;
  content: string;
  tokenCount: number;
  importance: number;
  count: number;
  reached: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface WorkingList {
  sessionId: string;
  items: WorkingEntry[];
  tokens: number;
  capTokens: number;
  focus: string | null;
  threshold: number;
}

export interface WorkingSession {
  sessionId: string;
  projectId?: string | null;
}
