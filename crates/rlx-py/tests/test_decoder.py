"""Decoders from the repository's tiny fixtures: greedy ids equal the Rust API's (the fixtures'
reference.json, which crates/rlx-models/tests/decoder_fixtures.rs and gguf_decoder.rs hold the
Rust API to), text generation agrees with tokenize / detokenize, stream pieces join to the whole
text, stop strings cut it, chat applies the template; every bad input raises its class."""

import json
import shutil
import signal
import threading
import time

import pytest

import rlx
from conftest import require_gpu

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)


def reference(fixtures, arch):
    return json.loads((fixtures / "decoders" / arch / "reference.json").read_text())


@pytest.fixture(scope="module")
def gguf_qwen2(fixtures):
    return rlx.Decoder(str(fixtures / "gguf_decoders" / "qwen2.f32.gguf"), device="cpu")


@pytest.mark.parametrize("arch", ["qwen2", "llama", "qwen3"])
def test_greedy_ids_equal_the_rust_api(fixtures, arch):
    ref = reference(fixtures, arch)
    dec = rlx.Decoder(str(fixtures / "decoders" / arch), device="cpu")
    assert dec.device == "cpu" and dec.vocab_size == ref["logits_shape"][1]
    got = dec.generate_ids(ref["prompt"], max_tokens=len(ref["greedy"]), ignore_eos=True)
    assert got == ref["greedy"]


def test_a_half_kv_cache_gives_the_same_greedy_ids(fixtures):
    # The tiny fixtures' greedy choices are far apart: rounding the cache to f16 keeps them.
    ref = reference(fixtures, "llama")
    dec = rlx.Decoder(str(fixtures / "decoders" / "llama"), device="cpu", kv_cache="f16")
    assert dec.generate_ids(ref["prompt"], max_tokens=len(ref["greedy"]), ignore_eos=True) == ref["greedy"]
    with pytest.raises(rlx.InvalidInput, match="auto, f32 or f16"):
        rlx.Decoder(str(fixtures / "decoders" / "llama"), device="cpu", kv_cache="q8")


def test_gguf_greedy_ids_equal_the_rust_api(fixtures, gguf_qwen2):
    ref = reference(fixtures, "qwen2")
    assert gguf_qwen2.architecture == "Qwen2ForCausalLM"
    assert gguf_qwen2.generate_ids(ref["prompt"], max_tokens=8, ignore_eos=True) == ref["greedy"]


def test_greedy_ids_on_vulkan(fixtures):
    ref = reference(fixtures, "qwen2")
    try:
        dec = rlx.Decoder(str(fixtures / "gguf_decoders" / "qwen2.f32.gguf"), device="vulkan")
    except rlx.DeviceUnavailable as e:
        if require_gpu():
            raise
        pytest.skip(f"vulkan unavailable: {e}")
    assert dec.generate_ids(ref["prompt"], max_tokens=8, ignore_eos=True) == ref["greedy"]


def test_text_generation_is_the_decoded_ids(gguf_qwen2):
    prompt = "hello world"
    ids = gguf_qwen2.tokenize(prompt)
    assert ids and all(isinstance(i, int) for i in ids)
    new = gguf_qwen2.generate_ids(ids, max_tokens=10, ignore_eos=True)
    text = gguf_qwen2.generate(prompt, max_tokens=10, ignore_eos=True)
    assert text == gguf_qwen2.detokenize(new)
    assert len(text) > 0


def test_stream_pieces_join_to_the_text(gguf_qwen2):
    whole = gguf_qwen2.generate("hello world", max_tokens=12, ignore_eos=True)
    stream = gguf_qwen2.generate("hello world", max_tokens=12, ignore_eos=True, stream=True)
    assert isinstance(stream, rlx.TextStream)
    pieces = list(stream)
    assert len(pieces) > 1 and all(pieces)
    assert "".join(pieces) == whole
    assert list(stream) == []  # exhausted


def test_sampling_is_seeded(gguf_qwen2):
    a = gguf_qwen2.generate_ids([1, 2, 3], max_tokens=8, temperature=0.9, top_k=40, top_p=0.9, seed=7)
    b = gguf_qwen2.generate_ids([1, 2, 3], max_tokens=8, temperature=0.9, top_k=40, top_p=0.9, seed=7)
    assert a == b and len(a) == 8


def test_stop_strings_cut_the_text(gguf_qwen2):
    whole = gguf_qwen2.generate("hello world", max_tokens=12, ignore_eos=True)
    stop = whole[len(whole) // 2 : len(whole) // 2 + 2]
    assert len(stop) == 2
    expected = whole[: whole.index(stop)]
    assert gguf_qwen2.generate("hello world", max_tokens=12, ignore_eos=True, stop=stop) == expected
    streamed = gguf_qwen2.generate("hello world", max_tokens=12, ignore_eos=True, stop=[stop, "\x00never"], stream=True)
    assert "".join(streamed) == expected


def test_eos_stops_unless_ignored(fixtures, tmp_path):
    ref = reference(fixtures, "llama")
    model = tmp_path / "llama"
    shutil.copytree(fixtures / "decoders" / "llama", model)
    third = ref["greedy"][2]
    (model / "generation_config.json").write_text(json.dumps({"bos_token_id": 1, "eos_token_id": [9999, third]}))
    dec = rlx.Decoder(str(model), device="cpu")
    assert third in dec.eos_token_ids
    assert dec.generate_ids(ref["prompt"], max_tokens=8) == ref["greedy"][:3]
    assert dec.generate_ids(ref["prompt"], max_tokens=8, ignore_eos=True) == ref["greedy"]


@pytest.fixture
def chat_model(fixtures, tmp_path):
    """The llama fixture with a tokenizer and a Llama-2-style chat template."""
    model = tmp_path / "llama-chat"
    shutil.copytree(fixtures / "decoders" / "llama", model)
    shutil.copy(fixtures / "gguf_decoders" / "llama.tokenizer.json", model / "tokenizer.json")
    config = {"chat_template": CHAT_TEMPLATE, "bos_token": "<s>", "eos_token": "</s>"}
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    return model


def test_chat_applies_the_template(chat_model):
    dec = rlx.Decoder(str(chat_model), device="cpu")
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    rendered = dec.apply_chat_template_text(messages)
    assert rendered == "<s>[system] be brief</s>[user] hi</s>[assistant]"
    ids = dec.tokenize(rendered, add_special_tokens=False)
    assert ids.count(1) == 1, ids  # one <s>: the template's, none added again
    expected = dec.detokenize(dec.generate_ids(ids, max_tokens=4, ignore_eos=True))
    assert dec.chat(messages, max_tokens=4, ignore_eos=True) == expected
    pairs = [("system", "be brief"), ("user", "hi")]
    assert "".join(dec.chat(pairs, max_tokens=4, ignore_eos=True, stream=True)) == expected


def test_model_errors(fixtures, tmp_path):
    with pytest.raises(rlx.ModelError, match="no such file or folder.*hub repo id"):
        rlx.Decoder(str(tmp_path / "nothing-here"), device="cpu")
    broken = tmp_path / "broken"
    shutil.copytree(fixtures / "decoders" / "qwen2", broken)
    (broken / "config.json").write_text("{not json")
    with pytest.raises(rlx.ModelError, match="config.json"):
        rlx.Decoder(str(broken), device="cpu")
    # A checkpoint without tokenizer.json: text prompts are refused, ids work.
    dec = rlx.Decoder(str(fixtures / "decoders" / "qwen2"), device="cpu")
    with pytest.raises(rlx.ModelError, match="no tokenizer"):
        dec.generate("hello")
    # No chat template.
    with pytest.raises(rlx.ModelError, match="no chat template"):
        dec.chat([{"role": "user", "content": "hi"}])


def test_invalid_inputs(gguf_qwen2):
    with pytest.raises(rlx.InvalidInput, match="outside"):
        gguf_qwen2.generate_ids([999999], max_tokens=2)
    with pytest.raises(rlx.InvalidInput, match="top_k and top_p only apply when sampling"):
        gguf_qwen2.generate("hi", top_k=5)
    with pytest.raises(rlx.InvalidInput):
        gguf_qwen2.generate_ids([1, 2], max_tokens=1000)  # past the context of 64
    with pytest.raises(rlx.InvalidInput, match="messages is empty"):
        gguf_qwen2.chat([])
    with pytest.raises(TypeError, match="prompt must be a str or a list of int"):
        gguf_qwen2.generate(None)
    with pytest.raises(TypeError, match="messages must be"):
        gguf_qwen2.chat([{"role": "user"}])
    with pytest.raises(TypeError, match="stop must be"):
        gguf_qwen2.generate("hi", stop=5)
    with pytest.raises(rlx.DeviceUnavailable, match="unknown device"):
        rlx.Decoder("x", device="npu")
    with pytest.raises(rlx.InvalidInput, match="precision"):
        rlx.Decoder("x", device="cpu", precision="int3")


def test_closed_decoder(fixtures):
    with rlx.Decoder(str(fixtures / "gguf_decoders" / "qwen2.f32.gguf"), device="cpu") as dec:
        assert dec.generate_ids([1, 2], max_tokens=1)
    with pytest.raises(rlx.ClosedError, match="Decoder is closed"):
        dec.generate_ids([1, 2], max_tokens=1)
    with pytest.raises(rlx.ClosedError):
        list(dec.generate("hi", max_tokens=2, stream=True))


def test_closing_a_stream_stops_it(fixtures, gguf_qwen2):
    ref = reference(fixtures, "qwen2")
    stream = gguf_qwen2.generate("hello world", max_tokens=40, ignore_eos=True, stream=True)
    first = next(stream)
    assert first
    stream.close()
    assert list(stream) == []
    # The worker let go of the model: the next call runs (and gives the reference ids).
    assert gguf_qwen2.generate_ids(ref["prompt"], max_tokens=8, ignore_eos=True) == ref["greedy"]


def test_keyboard_interrupt_stops_a_generation(fixtures, gguf_qwen2):
    """Ctrl-C during a generation raises KeyboardInterrupt and leaves the model usable."""
    ref = reference(fixtures, "qwen2")
    main = threading.main_thread().ident
    started = threading.Event()

    def interrupt():
        started.wait(timeout=30)
        signal.pthread_kill(main, signal.SIGINT)

    # Python turns SIGINT into KeyboardInterrupt only if SIGINT was not ignored when it started,
    # and a process started in the background by a non-interactive shell (`cmd &`, as a CI
    # runner may) inherits it ignored: the signal then vanished and the test said "DID NOT
    # RAISE". Install the default handler for the test, whatever the parent did.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    t = threading.Thread(target=interrupt)
    t.start()
    try:
        # Bounded by time, not by a count of calls, so a late interrupting thread still lands.
        deadline = time.monotonic() + 60
        with pytest.raises(KeyboardInterrupt):
            started.set()
            while time.monotonic() < deadline:
                gguf_qwen2.generate([1, 2, 3], max_tokens=50, ignore_eos=True)
    finally:
        t.join()
        signal.signal(signal.SIGINT, previous)
    assert gguf_qwen2.generate_ids(ref["prompt"], max_tokens=8, ignore_eos=True) == ref["greedy"]


def test_threads_share_one_decoder(fixtures, gguf_qwen2):
    ref = reference(fixtures, "qwen2")
    results = [None] * 4

    def work(i):
        results[i] = gguf_qwen2.generate_ids(ref["prompt"], max_tokens=8, ignore_eos=True)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [ref["greedy"]] * 4


def test_an_unread_stream_does_not_block_the_model(fixtures, gguf_qwen2):
    ref = reference(fixtures, "qwen2")
    stream = gguf_qwen2.generate("hello world", max_tokens=40, ignore_eos=True, stream=True)
    # The same thread uses the model while the stream is unread: no deadlock.
    assert gguf_qwen2.generate_ids(ref["prompt"], max_tokens=8, ignore_eos=True) == ref["greedy"]
    assert "".join(stream) == gguf_qwen2.generate("hello world", max_tokens=40, ignore_eos=True)
