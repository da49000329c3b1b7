#!/usr/bin/env node
// node-redlock (ioredis, one connection) acquire+release benchmark; prints one JSON object.
//
//   node redlock_bench.js --port P [--host 127.0.0.1] --mode serial|throughput|handoff
//        [--users N] [--waiters N] [--duration S] [--pairs N] [--handoffs N]
//        [--ttl MS] [--retry-delay MS] [--retry-jitter MS] [--hold MS]
//
// serial:     one caller, acquire+release pairs back to back on one resource.
// throughput: N concurrent users on N distinct resources, all on one ioredis connection.
// handoff:    waiters+1 contenders on one resource; each holds for --hold ms then releases and
//             rejoins the waiters after the next grant (plus a random arrival delay within one
//             retry interval); the hand-off latency is the time from a holder starting its
//             release until the next contender holds. Waiters retry on redlock's timer
//             (retryDelay ± retryJitter; the library defaults unless overridden): how redlock waits.
// Client CPU is process.cpuUsage() (user+system) over the measured interval / pairs.
'use strict';
const fs = require('fs');
const path = require('path');
const Redis = require('ioredis');
const RedlockModule = require('redlock');
const Redlock = RedlockModule.default || RedlockModule;

function parseArgs(argv) {
  const a = {host: '127.0.0.1', port: 6379, mode: 'serial', users: 1, waiters: 8, duration: 2,
             pairs: 0, handoffs: 20, ttl: 10000, retryDelay: null, retryJitter: null, hold: 2,
             prefix: 'lwbench:redlock:'};
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[++i];
    if (v === undefined) throw new Error(`missing value for --${k}`);
    const key = k.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(key in a)) throw new Error(`unknown option --${k}`);
    a[key] = typeof a[key] === 'string' ? v : Number(v);
    if (typeof a[key] === 'number' && !Number.isFinite(a[key])) throw new Error(`bad --${k} ${v}`);
  }
  if (!['serial', 'throughput', 'handoff'].includes(a.mode)) {
    throw new Error(`bad --mode ${a.mode}`);
  }
  return a;
}

function pkgVersion(name) {
  try {
    const f = path.join(__dirname, 'node_modules', name, 'package.json');
    return JSON.parse(fs.readFileSync(f, 'utf8')).version.replace(/^v/, '');
  } catch (e) {
    return 'unknown';
  }
}

// Summary of latency samples in microseconds; quantiles_us has 101 points (0..100th percentile).
function summarize(samples) {
  const s = Float64Array.from(samples).sort();
  const n = s.length;
  if (n === 0) return {latency_us: {n: 0}, quantiles_us: []};
  const q = (p) => {
    const x = p * (n - 1);
    const lo = Math.floor(x), hi = Math.ceil(x);
    return s[lo] + (s[hi] - s[lo]) * (x - lo);
  };
  let sum = 0;
  for (const v of s) sum += v;
  const quantiles = [];
  for (let i = 0; i <= 100; i++) quantiles.push(+q(i / 100).toFixed(2));
  return {
    latency_us: {
      n, mean: sum / n, min: s[0], p50: q(0.5), p90: q(0.9), p99: q(0.99), max: s[n - 1],
    },
    quantiles_us: quantiles,
  };
}

const nowUs = () => Number(process.hrtime.bigint()) / 1e3;
const cpuUs = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const a = parseArgs(process.argv);
  const client =
      new Redis({host: a.host, port: a.port, lazyConnect: true, enableAutoPipelining: false});
  await client.connect();
  await client.ping();
  // Counts the commands this client sends (round trips, since nothing is pipelined here);
  // byName counts the whole process, so that collect.py can tell them from those the scripts call.
  let sent = 0;
  const byName = {};
  const send = client.sendCommand.bind(client);
  client.sendCommand = (...args) => {
    sent++;
    const name = String((args[0] && args[0].name) || '?').toLowerCase();
    byName[name] = (byName[name] || 0) + 1;
    return send(...args);
  };
  const settings = {retryCount: a.mode === 'handoff' ? -1 : 0};
  if (a.retryDelay !== null) settings.retryDelay = a.retryDelay;
  if (a.retryJitter !== null) settings.retryJitter = a.retryJitter;
  const redlock = new Redlock([client], settings);
  const effective = {
    retryDelay: redlock.settings.retryDelay,
    retryJitter: redlock.settings.retryJitter,
    retryCount: redlock.settings.retryCount,
  };
  const deadline = (t0) => t0 + a.duration * 1e6;
  const samples = [];
  let ops = 0;

  // Warm-up: loads the scripts (EVALSHA misses fall back to EVAL once) and JITs the path.
  for (let i = 0; i < 50; i++) await (await redlock.acquire([a.prefix + 'warm'], a.ttl)).release();

  sent = 0;
  const cpu0 = cpuUs();
  const t0 = nowUs();
  if (a.mode === 'serial') {
    const res = [a.prefix + 'serial'];
    while (a.pairs > 0 ? ops < a.pairs : nowUs() < deadline(t0)) {
      const s = nowUs();
      const lock = await redlock.acquire(res, a.ttl);
      await lock.release();
      samples.push(nowUs() - s);
      ops++;
    }
  } else if (a.mode === 'throughput') {
    const end = deadline(t0);
    const user = async (u) => {
      const res = [a.prefix + 'tp:' + u];
      while (a.pairs > 0 ? ops < a.pairs : nowUs() < end) {
        const s = nowUs();
        const lock = await redlock.acquire(res, a.ttl);
        await lock.release();
        samples.push(nowUs() - s);
        ops++;
      }
    };
    await Promise.all(Array.from({length: a.users}, (_, u) => user(u)));
  } else {
    // A fresh resource per run: contenders still waiting at the end are abandoned, not drained.
    const res = [`${a.prefix}handoff:${process.pid}:${Date.now()}`];
    const end = deadline(t0);
    let releaseStarted = null;  // when the current holder began releasing
    let finish;
    const finished = new Promise((r) => (finish = r));
    let done = false;
    // A releaser rejoins only after the next grant, as a fresh waiter: otherwise it would
    // re-acquire at once (before any timer-driven waiter retries) and measure nothing.
    let grantWaiters = [];
    const nextGrant = () => new Promise((r) => grantWaiters.push(r));
    // Waiters arrive, and rejoin after a grant, at random points within one retry interval, so
    // their retry phases are independent (as for separate clients), not a synchronised herd.
    const arrive = () => sleep(Math.random() * effective.retryDelay);
    const contender = async () => {
      await arrive();
      while (!done) {
        const lock = await redlock.acquire(res, a.ttl);
        const got = nowUs();
        const w = grantWaiters;
        grantWaiters = [];
        w.forEach((r) => r());
        if (done) break;
        if (releaseStarted !== null) {
          samples.push(got - releaseStarted);
          ops++;
        }
        done = ops >= a.handoffs || got >= end;
        if (!done) await sleep(a.hold);  // let every other contender fail and go back to waiting
        const granted = nextGrant();
        releaseStarted = nowUs();
        await lock.release();
        if (done) finish();
        await granted;
        await arrive();
      }
    };
    for (let i = 0; i <= a.waiters; i++) contender().catch((e) => finish(e));
    const err = await finished;
    if (err) throw err;
  }
  const seconds = (nowUs() - t0) / 1e6;
  const cpu = (cpuUs() - cpu0) / 1e6;
  const commands = sent;
  const out = {
    contender: 'node-redlock',
    library: `redlock ${pkgVersion('redlock')} + ioredis ${pkgVersion('ioredis')}`,
    runtime: `node ${process.version}`,
    mode: a.mode,
    users: a.mode === 'throughput' ? a.users : 1,
    waiters: a.mode === 'handoff' ? a.waiters : 0,
    connections: 1,
    ops,
    seconds,
    cpu_seconds: cpu,
    ops_per_sec: ops / seconds,
    cpu_us_per_op: ops ? (cpu * 1e6) / ops : null,
    commands_sent: commands,
    commands_per_op: ops ? commands / ops : null,
    commands_by_name: byName,
    settings: {ttl_ms: a.ttl, hold_ms: a.mode === 'handoff' ? a.hold : undefined, ...effective},
    ...summarize(samples),
  };
  process.stdout.write(JSON.stringify(out) + '\n');
  client.disconnect();
  process.exit(0);  // abandons hand-off waiters still polling
}

main().catch((e) => {
  process.stderr.write(`redlock_bench: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
