/**
 * The configuration in force (kube's apf_controller): the FlowSchemas in matching order and a priority level, with
 * its queue set, for each PriorityLevelConfiguration. A new configuration is digested as kube digests it:
 *
 * - objects that fail validation are left out, with a warning naming the field (never trusted, never a crash);
 * - a FlowSchema whose level does not exist is left out of matching (its requests fall to the next schema that
 *   matches, catch-all at worst), with a warning (kube marks it Dangling);
 * - the mandatory levels and schemas (exempt, catch-all) are supplied when missing, and keep their built-in spec
 *   when present (kube-apiserver puts it back on any change; only the exempt level's lending and shares are the
 *   admins'), so system:masters is always exempt and every request always has a schema;
 * - a level that stays keeps its queue set and its waiting requests; a removed one's requests run out on theirs.
 *
 * Every adjustment period the levels' limits are shared again by demand (concurrency.ts).
 */
import type { Logger } from '../log.js';
import { MANDATORY_FLOW_SCHEMAS, MANDATORY_PRIORITY_LEVELS } from './bootstrap.js';
import { FlowActivity } from './activity.js';
import { BodyTurns } from './bodyturns.js';
import { allocate, levelBounds, type DemandState, type LevelBounds } from './concurrency.js';
import { byPrecedence, flowDistinguisher, matchesFlowSchema, type RequestDigest } from './match.js';
import { QueueSet, type Clock, type QueueSetConfig } from './queueset.js';
import { levelMaxSeats } from './seats.js';
import { WatchTracker } from './watches.js';
import {
  CATCH_ALL,
  EXEMPT,
  queuingOf,
  validateFlowSchema,
  validatePriorityLevel,
  type FlowSchema,
  type PriorityLevelConfiguration,
} from './types.js';

/** kube's adjustment period of the levels' limits. */
export const ADJUSTMENT_PERIOD_MS = 10_000;
/**
 * How long a light flow counts as at work after its last request ended (activity.ts): longer than a client's pause
 * between one answer and its next request (a controller's GETs, kubectl's steps), short enough that a flow alone gets
 * the whole server within a second of the others going.
 */
export const LIGHT_FLOW_WINDOW_MS = 1_000;

export class PriorityLevel {
  readonly demand: DemandState = { smoothed: 0 };

  constructor(
    public config: PriorityLevelConfiguration,
    public bounds: LevelBounds,
    readonly queueSet: QueueSet,
  ) {}

  get name(): string {
    return this.config.metadata.name!;
  }

  get uid(): string {
    return this.config.metadata.uid ?? '';
  }

  get exempt(): boolean {
    return this.config.spec.type === 'Exempt';
  }

  /** The most seats one request takes here. */
  get maxSeats(): number {
    return levelMaxSeats(this.bounds.nominal);
  }
}

export interface Classification {
  flowSchema: FlowSchema;
  level: PriorityLevel;
  distinguisher: string;
}

export class FlowControl {
  private schemas: FlowSchema[] = [];
  private readonly levelsByName = new Map<string, PriorityLevel>();
  /** The watches open now, which a write's seats are estimated from. */
  readonly watches = new WatchTracker();

  /** The flows at work across the levels, for the bound on one flow (activity.ts). */
  readonly activity: FlowActivity;
  /** Turns of each flow for requests whose body is still coming (bodyturns.ts). */
  readonly bodyTurns: BodyTurns;

  constructor(
    /** The server's seats: --max-requests-inflight plus --max-mutating-requests-inflight. */
    readonly serverSeats: number,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly clock: Clock = Date.now,
    /** The most seats one flow holds at once while a light flow is at work (0: no bound but the headroom). */
    readonly flowSeatLimit = 0,
  ) {
    this.activity = new FlowActivity(flowSeatLimit, LIGHT_FLOW_WINDOW_MS, () => {
      for (const level of this.levelsByName.values()) level.queueSet.redispatch();
    });
    this.bodyTurns = new BodyTurns(flowSeatLimit);
    this.configure([], []);
  }

  levels(): PriorityLevel[] {
    return [...this.levelsByName.values()];
  }

  flowSchemas(): readonly FlowSchema[] {
    return this.schemas;
  }

  /** The first schema (in matching order) that matches; the mandatory catch-all matches every request. */
  classify(digest: RequestDigest): Classification {
    for (const fs of this.schemas) {
      if (!matchesFlowSchema(fs, digest)) continue;
      const level = this.levelsByName.get(fs.spec.priorityLevelConfiguration.name)!;
      return { flowSchema: fs, level, distinguisher: flowDistinguisher(fs, digest) };
    }
    // Only when a catch-all from the host was made narrower than every request: kube's own catch-all answers.
    const fs = MANDATORY_FLOW_SCHEMAS.find((s) => s.metadata.name === CATCH_ALL)!;
    const level = this.levelsByName.get(CATCH_ALL)!;
    return { flowSchema: fs, level, distinguisher: flowDistinguisher(fs, digest) };
  }

  /** Takes a new configuration (the host's objects, or the built-in ones). */
  configure(flowSchemas: FlowSchema[], priorityLevels: PriorityLevelConfiguration[]): void {
    const levels = new Map<string, PriorityLevelConfiguration>();
    for (const pl of priorityLevels.map(mandatoryLevelSpec)) {
      const errs = validatePriorityLevel(pl);
      if (errs.length) {
        this.log.warn('ignoring an invalid PriorityLevelConfiguration', { name: pl.metadata?.name, errors: errs });
        continue;
      }
      levels.set(pl.metadata.name!, pl);
    }
    for (const pl of MANDATORY_PRIORITY_LEVELS) if (!levels.has(pl.metadata.name!)) levels.set(pl.metadata.name!, pl);

    const schemas: FlowSchema[] = [];
    for (const fs of flowSchemas.map(mandatorySchemaSpec)) {
      const errs = validateFlowSchema(fs);
      if (errs.length) {
        this.log.warn('ignoring an invalid FlowSchema', { name: fs.metadata?.name, errors: errs });
        continue;
      }
      const level = fs.spec.priorityLevelConfiguration.name;
      if (!levels.has(level)) {
        this.log.warn('ignoring a FlowSchema whose PriorityLevelConfiguration does not exist (dangling)', {
          name: fs.metadata.name,
          priorityLevelConfiguration: level,
        });
        continue;
      }
      schemas.push(fs);
    }
    for (const fs of MANDATORY_FLOW_SCHEMAS)
      if (!schemas.some((s) => s.metadata.name === fs.metadata.name)) schemas.push(fs);
    schemas.sort(byPrecedence);
    this.schemas = schemas;

    const bounds = levelBounds(this.serverSeats, [...levels.values()]);
    for (const name of [...this.levelsByName.keys()]) if (!levels.has(name)) this.levelsByName.delete(name);
    for (const [name, pl] of levels) {
      const b = bounds.get(name)!;
      const queueConfig = this.queueConfig(pl, b.nominal, b.nominal);
      const existing = this.levelsByName.get(name);
      if (existing) {
        existing.config = pl;
        existing.bounds = b;
        existing.queueSet.reconfigure(queueConfig);
      } else {
        this.levelsByName.set(name, new PriorityLevel(pl, b, new QueueSet(queueConfig, this.clock, this.activity)));
      }
    }
  }

  /** Shares the seats again by the demand of the period just ended (called every ADJUSTMENT_PERIOD_MS). */
  adjust(): void {
    const levels = this.levels();
    const limits = allocate(
      levels.map((l) => ({ bounds: l.bounds, demand: l.queueSet.takeDemand(), state: l.demand, exempt: l.exempt })),
    );
    levels.forEach((l, i) => {
      if (l.exempt || l.queueSet.concurrencyLimit === limits[i]) return;
      l.queueSet.reconfigure(this.queueConfig(l.config, limits[i], l.bounds.nominal));
    });
  }

  /** A level's queue set at `concurrencyLimit` seats; its widest request (the headroom) is from its nominal seats. */
  private queueConfig(pl: PriorityLevelConfiguration, concurrencyLimit: number, nominal: number): QueueSetConfig {
    return {
      queuing: queuingOf(pl),
      exempt: pl.metadata.name === EXEMPT || pl.spec.type === 'Exempt',
      concurrencyLimit,
      flowHeadroom: levelMaxSeats(nominal),
      flowSeatLimit: this.flowSeatLimit || undefined,
    };
  }
}

/** A mandatory schema keeps the built-in spec (its uid stays the host's). */
function mandatorySchemaSpec(fs: FlowSchema): FlowSchema {
  const builtIn = MANDATORY_FLOW_SCHEMAS.find((m) => m.metadata.name === fs.metadata?.name);
  return builtIn ? { ...fs, spec: builtIn.spec } : fs;
}

/** catch-all keeps the built-in spec; exempt stays exempt, with the admins' shares and lending. */
function mandatoryLevelSpec(pl: PriorityLevelConfiguration): PriorityLevelConfiguration {
  const name = pl.metadata?.name;
  if (name === CATCH_ALL) return { ...pl, spec: MANDATORY_PRIORITY_LEVELS.find((m) => m.metadata.name === name)!.spec };
  if (name === EXEMPT) return { ...pl, spec: { type: 'Exempt', exempt: pl.spec?.exempt ?? {} } };
  return pl;
}
