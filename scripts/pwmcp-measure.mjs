// Playwright MCP's side of the issue-23 measurements (tests/browser_page_tools.rs
// `measure_pages` is this project's side): for each URL, browser_navigate latency (p50 and
// min of MEASURE_ROUNDS, default 7; its result includes a snapshot) and browser_snapshot's
// characters and refs, one JSON line per page.
//
//   PWMCP_DIR=/path/to/an/npm/install/of/@playwright/mcp node scripts/pwmcp-measure.mjs URL...
//
// CHROMIUM (default /usr/bin/chromium) is the browser both sides drive.
import { tmpdir } from 'node:os';

const dir = process.env.PWMCP_DIR ?? '/work/pwmcp';
const sdk = `${dir}/node_modules/@modelcontextprotocol/sdk/dist/esm/client`;
const { Client } = await import(`${sdk}/index.js`);
const { StdioClientTransport } = await import(`${sdk}/stdio.js`);
const rounds = Number(process.env.MEASURE_ROUNDS ?? 7);
const transport = new StdioClientTransport({
  command: 'node',
  args: [`${dir}/node_modules/@playwright/mcp/cli.js`, '--headless', '--browser', 'chromium',
    '--executable-path', process.env.CHROMIUM ?? '/usr/bin/chromium', '--no-sandbox',
    // Its console logs go there, not into the current directory.
    '--output-dir', `${tmpdir()}/pwmcp-measure`],
});
const client = new Client({ name: 'measure', version: '1' });
await client.connect(transport);
const textOf = result => result.content.filter(item => item.type === 'text').map(item => item.text).join('\n');
for (const url of process.argv.slice(2)) {
  const times = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    await client.callTool({ name: 'browser_navigate', arguments: { url } });
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const snapshot = textOf(await client.callTool({ name: 'browser_snapshot', arguments: {} }));
  const outline = (snapshot.match(/```yaml\n([\s\S]*?)\n```/) ?? [undefined, ''])[1];
  console.log(JSON.stringify({
    url,
    navP50: Math.round(times[Math.floor(times.length / 2)]),
    navMin: Math.round(times[0]),
    resultChars: snapshot.length,
    outlineChars: outline.length,
    refs: (outline.match(/\[ref=/g) ?? []).length,
  }));
}
await client.close();
