// ioredis with default options against `lockwire-sim serve` (its ready check sends INFO and
// waits for loading:0), then the commands an application's tests use. Exit 0 when all match.
const Redis = require('ioredis');
const assert = require('assert');

async function main() {
  const port = Number(process.argv[2]);
  const r = new Redis({ port });
  const sub = new Redis({ port });
  await new Promise((ok, fail) => { r.once('ready', ok); r.once('error', fail); });
  assert.strictEqual(r.status, 'ready');
  assert.strictEqual(await r.set('k', 'v'), 'OK');
  assert.strictEqual(await r.get('k'), 'v');
  assert.strictEqual(await r.setex('t', 100, 'x'), 'OK');
  assert.ok((await r.ttl('t')) > 90);
  assert.strictEqual(await r.incrbyfloat('f', '1.5'), '1.5');
  assert.strictEqual(await r.strlen('k'), 1);
  assert.strictEqual(await r.hmset('h', { a: '1', b: '2' }), 'OK');
  assert.deepStrictEqual(await r.hgetall('h'), { a: '1', b: '2' });
  assert.strictEqual(await r.rpush('l', 'a', 'b', 'c'), 3);
  assert.deepStrictEqual(await r.lrange('l', 0, -1), ['a', 'b', 'c']);
  assert.deepStrictEqual(await r.blpop('l', 1), ['l', 'a']);
  const t0 = Date.now();
  assert.strictEqual(await r.blpop('empty', 0.2), null);
  assert.ok(Date.now() - t0 >= 150);
  assert.strictEqual(await r.zadd('z', 1, 'a', 2, 'b'), 2);
  assert.deepStrictEqual(await r.zrange('z', 0, -1, 'WITHSCORES'), ['a', '1', 'b', '2']);
  assert.strictEqual(await r.sadd('s', 'x', 'y'), 2);
  assert.strictEqual(await r.scard('s'), 2);
  assert.strictEqual(await r.rename('k', 'k2'), 'OK');
  assert.strictEqual(await r.copy('k2', 'k3'), 1);
  const res = await r.multi().incr('n').incr('n').exec();
  assert.deepStrictEqual(res, [[null, 1], [null, 2]]);
  const cfg = await r.config('GET', 'maxmemory');
  assert.deepStrictEqual(cfg, ['maxmemory', '0']);
  assert.ok((await r.info('server')).includes('redis_version:7.0.15'));
  assert.ok((await r.client('LIST')).includes('id='));
  // pub/sub
  const got = new Promise((ok) => sub.on('message', (ch, m) => ok([ch, m])));
  await sub.subscribe('news');
  assert.strictEqual(await r.publish('news', 'hello'), 1);
  assert.deepStrictEqual(await got, ['news', 'hello']);
  assert.deepStrictEqual(await r.pubsub('CHANNELS'), ['news']);
  // a blocked client woken by another's push
  const waiter = new Redis({ port });
  const popped = waiter.brpop('q', 0);
  await new Promise((ok) => setTimeout(ok, 50));
  await r.lpush('q', 'job');
  assert.deepStrictEqual(await popped, ['q', 'job']);
  await Promise.all([r.quit(), sub.quit(), waiter.quit()]);
  console.log('ioredis: all checks passed');
}

main().catch((e) => { console.error('ioredis:', e); process.exit(1); });
