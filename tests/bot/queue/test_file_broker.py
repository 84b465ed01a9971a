"""The embedded broker's messages through a real kombu connection: whole files only, each
durable when its send returns, or all of a block's flushed together when it ends."""

from __future__ import annotations

from pathlib import Path

import pytest
from kombu import Connection, Exchange, Queue

from bot.queue import file_broker

file_broker.register()


@pytest.fixture
def connection(tmp_path: Path):
    folder = tmp_path / "broker"
    folder.mkdir()
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder)}
    with Connection("durable-files://localhost/", transport_options=options) as conn:
        yield conn, folder


def _send(conn: Connection, bodies: list[str], name: str = "work") -> None:
    # A name per test: kombu keeps exchanges and bindings in class-level state, across
    # connections, so a second test's folder would get the first's routes.
    exchange = Exchange(f"tasks-{name}", type="direct")
    queue = Queue(name, exchange, routing_key=name)
    with conn.Producer() as producer:
        for body in bodies:
            producer.publish(body, exchange=exchange, routing_key=name, declare=[queue])


def _receive(conn: Connection, name: str = "work") -> list[str]:
    got: list[str] = []
    queue = conn.SimpleQueue(name)
    try:
        while True:
            message = queue.get(block=False)
            got.append(message.payload)
            message.ack()
    except queue.Empty:
        return got
    finally:
        queue.close()


def test_messages_sent_in_one_sync_arrive_whole_and_in_order(connection) -> None:
    conn, folder = connection
    with file_broker.one_sync():
        _send(conn, ["first", "second"])
        with file_broker.one_sync():  # nested: flushed with the outer block
            _send(conn, ["third"])
        assert len(list(folder.glob("*.work.msg"))) == 3  # visible at once, flushed at the end
    assert not list(folder.glob("*.part"))
    assert sorted(_receive(conn)) == ["first", "second", "third"]  # one ms: any order


def test_a_message_outside_a_block_is_still_sent(connection) -> None:
    conn, _ = connection
    _send(conn, ["alone"], "alone")
    assert _receive(conn, "alone") == ["alone"]


def test_flushing_takes_files_already_consumed_and_an_empty_list(tmp_path: Path) -> None:
    kept = tmp_path / "1.work.msg"
    kept.write_text("{}")
    file_broker.flush_to_disk([])
    file_broker.flush_to_disk([str(kept), str(tmp_path / "gone.work.msg")])
    assert kept.read_text() == "{}"


def test_the_fallback_syncs_each_file_when_there_is_no_syncfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Reason for the patch: this machine's libc has syncfs; the per-file path is the one other
    # platforms take, and it must accept the same inputs.
    monkeypatch.setattr(file_broker, "_syncfs", lambda: None)
    kept = tmp_path / "1.work.msg"
    kept.write_text("{}")
    file_broker.flush_to_disk([str(kept), str(tmp_path / "gone.work.msg")])
    assert kept.read_text() == "{}"


def test_this_platform_has_syncfs() -> None:
    assert file_broker._syncfs() is not None  # Linux: one flush per block, not one per message
