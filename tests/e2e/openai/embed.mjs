// embed.mjs -- the official OpenAI Node SDK (npm `openai`, pinned by
// package-lock.json) as a real client of tokvec's /v1/embeddings.
// Usage: node embed.mjs BASE_URL API_KEY REQUEST_JSON
// Prints {"default": <the SDK's answer with its default encoding (base64,
// decoded by the SDK)>, "float": <the same with encoding_format "float">}.
import OpenAI from "openai";

const [baseURL, apiKey, request] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const req = JSON.parse(request);
const out = {};
out.default = await client.embeddings.create(req);
out.float = await client.embeddings.create({ ...req, encoding_format: "float" });
try {
  await client.embeddings.create({ ...req, input: "" });
  out.empty = null;
} catch (e) {
  out.empty = { status: e.status, code: e.code, type: e.type };
}
console.log(JSON.stringify(out));
