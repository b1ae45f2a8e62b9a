"""librdkafka (confluent-kafka-python) transactional producer for the
interop transaction test (txn_librdkafka_test.go):

    txn_client.py BROKERS TOPIC TRANSACTIONAL_ID

It commits c1 and c2, aborts a1, commits c3, all to partition 0, and
prints "done"; an error ends it with a message on stderr and exit code 1.
"""

import sys

from confluent_kafka import Producer


def main(brokers, topic, txn_id):
    p = Producer({
        "bootstrap.servers": brokers,
        "transactional.id": txn_id,
        "transaction.timeout.ms": 60000,
    })
    p.init_transactions(30)
    for commit, values in ((True, ["c1", "c2"]), (False, ["a1"]), (True, ["c3"])):
        p.begin_transaction()
        for v in values:
            p.produce(topic, v.encode(), partition=0)
        p.flush(30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    print("done", flush=True)


if __name__ == "__main__":
    try:
        main(*sys.argv[1:4])
    except Exception as e:  # a KafkaException names librdkafka's error
        print(f"txn_client: {e}", file=sys.stderr)
        sys.exit(1)
