// gpt-3-encoder's side of bench_tokenizer: encodes each line of TEXT_FILE twice
// (first pass with an empty cache, then warm) and prints one JSON line.
//   node bench_tokenizer.js MODULE_DIR TEXT_FILE
const fs = require("fs");
const [moduleDir, textFile] = process.argv.slice(2);
const { encode } = require(moduleDir);

const text = fs.readFileSync(textFile);
const lines = text.toString("utf8").split("\n");
let tokens = 0, checksum = 0;
const pass = () => {
  const start = process.hrtime.bigint();
  tokens = 0;
  checksum = 0;
  for (const line of lines) {
    for (const id of encode(line)) {
      checksum = (Math.imul(checksum, 31) + id) >>> 0;  // the C++ side hashes the same way
      ++tokens;
    }
  }
  return Number(process.hrtime.bigint() - start) / 1e9;
};
const cold = pass();
const warm = pass();
console.log(JSON.stringify({ bytes: text.length, cold_s: cold, warm_s: warm, tokens, checksum }));
