// The demo page: loads rlx-web (wasm-bindgen's `--target web` output in ./pkg), the MiniLM
// files from ./model/ (same origin), and shows the cosine-similarity matrix of the sentences
// typed in. Query parameters: device=auto|webgpu|cpu, precision=f32|f16, model=<base URL>,
// test=1 (embed ./fixture.json's sentences and publish the result as window.rlxResult, for
// scripts/browser_test.py).
import init, { Embedder } from "./pkg/rlx_web.js";

const params = new URLSearchParams(location.search);
const $ = (id) => document.getElementById(id);

/** Cosine similarity of two Float32Arrays. */
function cosine(a, b) {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

function escape(s) {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

/** Renders the similarity matrix of `sentences` (their `embeddings`) as a coloured table. */
function showMatrix(sentences, embeddings) {
  const head = sentences.map((_, j) => `<th>${j + 1}</th>`).join("");
  const rows = sentences.map((s, i) => {
    const cells = embeddings.map((e, j) => {
      const c = cosine(embeddings[i], e);
      const shade = Math.round(255 - Math.max(0, c) * 150);
      return `<td style="background: rgb(${shade}, ${shade}, 255)">${c.toFixed(3)}</td>`;
    }).join("");
    return `<tr><th class="row" title="${escape(s)}">${i + 1}. ${escape(s)}</th>${cells}</tr>`;
  }).join("");
  $("matrix").innerHTML = `<table><tr><th></th>${head}</tr>${rows}</table>`;
}

function showStatus(embedder, ms, count) {
  const time = ms === undefined ? "" : `; <b>${ms.toFixed(1)} ms</b> for a batch of ${count}`;
  $("status").innerHTML =
    `device <b id="device">${embedder.device}</b>, adapter <b id="adapter">${escape(embedder.adapter)}</b>${time}`;
}

/** Embeds `sentences` and returns the embeddings with the time taken in milliseconds. */
async function timedEmbed(embedder, sentences) {
  const start = performance.now();
  const embeddings = await embedder.embed(sentences);
  return { embeddings, ms: performance.now() - start };
}

async function embedTyped(embedder) {
  const sentences = $("sentences").value.split("\n").map((s) => s.trim()).filter((s) => s);
  const { embeddings, ms } = await timedEmbed(embedder, sentences);
  showStatus(embedder, ms, sentences.length);
  showMatrix(sentences, embeddings);
  return { count: sentences.length, ms };
}

/**
 * Test mode: the fixture's sentences once (the batch is padded to its 256-token sentence, which
 * takes minutes on SwiftShader; a warm repeat would double that), then the demo twice (the
 * first run compiles its shapes; the second is the warm time per batch).
 */
async function runTest(embedder) {
  const fixture = await (await fetch("fixture.json")).json();
  const first = await timedEmbed(embedder, fixture.sentences);
  const demo = await embedTyped(embedder);
  const again = await embedTyped(embedder);
  let f16 = null;
  if (params.get("f16check") === "1") {
    try {
      await Embedder.load(params.get("model") ?? "model/", embedder.device, "f16");
      f16 = "loaded";
    } catch (e) {
      f16 = String(e.message ?? e);
    }
  }
  return {
    device: embedder.device,
    adapter: embedder.adapter,
    batch: fixture.sentences.length,
    ms_first: first.ms,
    demo_batch: demo.count,
    demo_ms_first: demo.ms,
    demo_ms_warm: again.ms,
    f16,
    embeddings: first.embeddings.map((e) => Array.from(e)),
  };
}

async function main() {
  const test = params.get("test") === "1";
  try {
    await init();
    const embedder = await Embedder.load(params.get("model") ?? "model/", params.get("device") ?? "auto",
      params.get("precision") ?? "f32");
    showStatus(embedder);
    $("embed").disabled = false;
    $("embed").onclick = () => embedTyped(embedder).catch(fail);
    const result = test ? await runTest(embedder) : null;
    if (!test) await embedTyped(embedder);
    publish(result);
  } catch (e) {
    fail(e);
  }
}

function fail(e) {
  const message = String(e?.message ?? e);
  $("status").innerHTML = `<span class="error">${escape(message)}</span>`;
  publish({ error: message });
}

/** Hands the test driver its answer (and leaves a copy in the page). */
function publish(result) {
  if (result === null) return;
  $("result").textContent = JSON.stringify({ ...result, embeddings: undefined });
  window.rlxResult = result;
}

main();
