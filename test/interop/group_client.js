// kafkajs for the interop group suite. Driven by client_proc_test.go,
// which documents the protocol:
//
//   node group_client.js produce BROKERS TOPIC        records as JSON on stdin
//   node group_client.js consume BROKERS GROUP TOPIC  commands on stdin
//
// Events go to stdout as JSON lines; kafkajs' own logs go to stderr.
'use strict';

const readline = require('readline');
const { Kafka, logLevel } = require('kafkajs');

function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n');
}

function client(brokers) {
  return new Kafka({
    clientId: 'interop-kafkajs',
    brokers: brokers.split(','),
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, label, log }) => {
      process.stderr.write(`${label} ${namespace}: ${JSON.stringify(log)}\n`);
    },
  });
}

async function readAll(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}

async function produce(brokers, topic) {
  const records = JSON.parse(await readAll(process.stdin));
  const producer = client(brokers).producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    // One send of every record: kafkajs sends one batch per partition and
    // answers each batch's base offset.
    const results = await producer.send({
      topic,
      acks: -1,
      messages: records.map((r) => ({ partition: r.partition, value: r.value })),
    });
    const base = new Map(results.map((r) => [r.partition, BigInt(r.baseOffset)]));
    const index = new Map();
    for (const r of records) {
      const i = index.get(r.partition) || 0n;
      index.set(r.partition, i + 1n);
      emit({ type: 'record', partition: r.partition, offset: Number(base.get(r.partition) + i), value: r.value });
    }
  } finally {
    await producer.disconnect();
  }
}

async function consume(brokers, group, topic) {
  const consumer = client(brokers).consumer({
    groupId: group,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 250,
  });
  const { GROUP_JOIN, REBALANCING, CRASH } = consumer.events;
  consumer.on(GROUP_JOIN, (e) => {
    const partitions = (e.payload.memberAssignment[topic] || []).slice().sort((a, b) => a - b);
    emit({ type: 'assigned', partitions });
  });
  consumer.on(REBALANCING, () => emit({ type: 'assigned', partitions: [] }));
  consumer.on(CRASH, (e) => emit({ type: 'error', error: `crash: ${e.payload.error}` }));

  // The offset after the last record delivered, by partition.
  const next = new Map();
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      emit({ type: 'record', partition, offset: Number(message.offset), value: message.value.toString() });
      next.set(partition, (BigInt(message.offset) + 1n).toString());
    },
  });

  // Commands run one at a time, in order; the end of stdin (the test went
  // away) closes the consumer too.
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await consumer.disconnect(); // leaves the group
  };
  let chain = Promise.resolve();
  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    chain = chain.then(async () => {
      if (line === 'commit') {
        try {
          await consumer.commitOffsets([...next].map(([partition, offset]) => ({ topic, partition, offset })));
          emit({ type: 'committed' });
        } catch (e) {
          emit({ type: 'error', error: `commit: ${e}` });
        }
      } else if (line === 'close') {
        await close();
      }
    });
  });
  lines.on('close', () => { chain = chain.then(close); });
}

async function main() {
  const [mode, ...args] = process.argv.slice(2);
  if (mode === 'produce') await produce(...args);
  else if (mode === 'consume') await consume(...args);
  else throw new Error(`unknown mode ${mode}`);
}

main().catch((e) => {
  emit({ type: 'error', error: String(e && e.stack || e) });
  process.exit(1);
});
