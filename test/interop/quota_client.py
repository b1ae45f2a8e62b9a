"""librdkafka (confluent-kafka-python) producer for the interop quota test
(quota_librdkafka_test.go):

    quota_client.py BROKERS TOPIC CLIENT_ID SECONDS WARMUP

It produces 10 kB records to partition 0 as fast as librdkafka lets it for
SECONDS, then prints one JSON line: the bytes acknowledged per second
between WARMUP and SECONDS, the throttles librdkafka reported (throttle_cb:
it read throttle_time_ms), the longest of them in ms, and the delivery
errors. An error ends it with a message on stderr and exit code 1.
"""

import json
import sys
import time

from confluent_kafka import Producer


def main(brokers, topic, client_id, seconds, warmup):
    seconds, warmup = float(seconds), float(warmup)
    throttles, errors, acked = [], [], []
    start = time.monotonic()

    def on_throttle(ev):
        if ev.throttle_time > 0:
            throttles.append(ev.throttle_time)

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            acked.append((time.monotonic() - start, len(msg.value())))

    p = Producer({
        "bootstrap.servers": brokers,
        "client.id": client_id,
        "throttle_cb": on_throttle,
        # One 10 kB record per request, so that one throttle is a small
        # part of the measured span.
        "batch.size": 16384,
        "linger.ms": 0,
        "compression.type": "none",
        # 16 records queued, 1.6 s of the test's quota: the flush at the
        # end waits for them at the quota's pace.
        "queue.buffering.max.messages": 16,
    })
    value = b"r" * 10000
    while time.monotonic() - start < seconds:
        try:
            p.produce(topic, value, partition=0, on_delivery=on_delivery)
        except BufferError:
            pass  # the queue is full: wait for deliveries
        p.poll(0.01)
    end = time.monotonic() - start
    p.flush(30)
    window = sum(n for t, n in acked if warmup <= t <= end)
    print(json.dumps({
        "rate": window / (end - warmup),
        "throttles": len(throttles),
        "max_throttle_ms": max(throttles, default=0) * 1000,
        "errors": errors[:5],
    }), flush=True)


if __name__ == "__main__":
    try:
        main(*sys.argv[1:6])
    except Exception as e:  # a KafkaException names librdkafka's error
        print(f"quota_client: {e}", file=sys.stderr)
        sys.exit(1)
