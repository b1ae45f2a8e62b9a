"""librdkafka (confluent-kafka-python) for the interop group suite.

Driven by client_proc_test.go, which documents the protocol:

    group_client.py produce BROKERS TOPIC        records as JSON on stdin
    group_client.py consume BROKERS GROUP TOPIC  commands on stdin

Events go to stdout as JSON lines; librdkafka's own logs go to stderr.
"""

import json
import queue
import sys
import threading

from confluent_kafka import Consumer, KafkaException, Producer


def emit(**event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def on_error(err):
    # librdkafka reports transient errors here too (a broker connection
    # going down); only fatal ones end the client.
    if err.fatal():
        emit(type="error", error=str(err))


def produce(brokers, topic):
    records = json.load(sys.stdin)
    producer = Producer({
        "bootstrap.servers": brokers,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "error_cb": on_error,
    })
    failed = []

    def delivered(err, msg):
        if err is not None:
            failed.append(str(err))
        else:
            emit(type="record", partition=msg.partition(), offset=msg.offset(),
                 value=msg.value().decode())

    for r in records:
        producer.produce(topic, r["value"].encode(), partition=r["partition"],
                         on_delivery=delivered)
    left = producer.flush(30)
    if left or failed:
        emit(type="error", error=f"{left} undelivered, errors {failed}")
        sys.exit(1)


def consume(brokers, group, topic):
    consumer = Consumer({
        "bootstrap.servers": brokers,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "fetch.wait.max.ms": 250,
        "error_cb": on_error,
    })

    def assigned(_, partitions):
        emit(type="assigned", partitions=sorted(p.partition for p in partitions))

    def revoked(_, partitions):
        emit(type="assigned", partitions=[])

    consumer.subscribe([topic], on_assign=assigned, on_revoke=revoked)

    # A thread reads the commands, so that polling goes on meanwhile; the
    # end of stdin (the test went away) closes the consumer too.
    commands = queue.Queue()

    def read_commands():
        for line in sys.stdin:
            commands.put(line.strip())
        commands.put("close")

    threading.Thread(target=read_commands, daemon=True).start()

    while True:
        try:
            command = commands.get_nowait()
        except queue.Empty:
            command = None
        if command == "commit":
            # Commits the offsets stored for the messages poll returned,
            # each one's offset + 1.
            try:
                parts = consumer.commit(asynchronous=False)
            except KafkaException as e:
                emit(type="error", error=f"commit: {e}")
                continue
            errors = [str(p.error) for p in parts if p.error is not None]
            if errors:
                emit(type="error", error=f"commit: {errors}")
            else:
                emit(type="committed")
        elif command == "close":
            consumer.close()  # leaves the group
            return
        msg = consumer.poll(0.1)
        if msg is None:
            continue
        if msg.error() is not None:
            emit(type="error", error=str(msg.error()))
            continue
        emit(type="record", partition=msg.partition(), offset=msg.offset(),
             value=msg.value().decode())


def main():
    mode = sys.argv[1]
    if mode == "produce":
        produce(*sys.argv[2:4])
    elif mode == "consume":
        consume(*sys.argv[2:5])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
