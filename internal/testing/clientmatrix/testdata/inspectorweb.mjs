// Drives the MCP Inspector's web client in headless Chromium as a person
// would: connect to a server of its list, open the Tools screen, call a tool,
// follow the task in the Tasks tab by its id and answer a question in the
// dialog the client shows. Usage: node inspectorweb.mjs <inspector url with
// its token> <chromium> <screenshot path> <case>, the cases being
//
//   delay    (server "openwop-modern") delay of CLIENTMATRIX_DELAY_MS, which
//            the server answers with a task;
//   approve  (server "openwop-modern") publish_report, its approval question
//            answered "accept" in the client's elicitation dialog;
//   legacy   (server "openwop-legacy") publish_report with "Run as task":
//            the task reaches input_required, whether the client shows the
//            question is recorded, and the task is cancelled from its card.
//
// It prints one JSON line {case, kind, status, isError, text, asked,
// protocol, tools, taskId, sawStatuses, taskObject, error, page}; on an
// error it saves a screenshot (JPEG) and puts the page's text in page.
import { chromium } from "playwright-core";

const [inspectorURL, executablePath, screenshot, which] = process.argv.slice(2);
const delayMs = process.env.CLIENTMATRIX_DELAY_MS ?? "3000";
// step bounds every wait of one step; task bounds a task's whole run.
const step = 20_000;
const task = 60_000 + Number(delayMs);

const out = { case: which, sawStatuses: [] };
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
const context = await browser.newContext({
  viewport: { width: 1400, height: 1000 },
  permissions: ["clipboard-read", "clipboard-write"],
});
const page = await context.newPage();
page.setDefaultTimeout(step);

// The server's card on the Servers screen, found by its name.
async function connect(server) {
  await page.goto(inspectorURL);
  // Mantine's switch is a hidden input under its track: force the click
  // through to it, as a click on the track does.
  await page.getByRole("switch", { name: `Connect or disconnect "${server}"` }).check({ force: true });
  await page.getByText("Connected", { exact: true }).waitFor();
  out.protocol = (await page.getByText(/^MCP \d{4}-\d{2}-\d{2}$/).first().textContent()).trim();
}

// Opens the Tools screen and selects the tool; returns how many tools the
// client listed.
async function selectTool(name) {
  await page.getByRole("banner").getByText("Tools", { exact: true }).click();
  const heading = page.getByRole("heading", { name: /^Tools \(\d+\)$/ });
  await heading.waitFor();
  out.tools = Number((await heading.textContent()).match(/\d+/)[0]);
  await page.getByRole("button", { name: new RegExp(`^${name}( |$)`) }).click();
  await page.getByRole("button", { name: "Execute Tool" }).waitFor();
}

// The task ids the Tasks tab shows.
async function taskIDs() {
  const ids = await page.getByText(/^ID: /).allTextContents();
  return ids.map((s) => s.replace(/^ID: /, "").trim());
}

// Executes the selected tool and returns the id of the task the Tasks tab
// shows for the call: one it did not show before.
async function executeAsTask() {
  await page.getByRole("heading", { name: "Tasks", exact: true }).waitFor();
  const before = new Set(await taskIDs());
  await page.getByRole("button", { name: "Execute Tool" }).click();
  let fresh = [];
  await until(async () => {
    fresh = (await taskIDs()).filter((id) => !before.has(id));
    return fresh.length > 0;
  }, "the Tasks tab shows a task for the call");
  if (fresh.length > 1) throw new Error(`the Tasks tab shows ${fresh.length} new tasks: ${fresh}`);
  return fresh[0];
}

// The task's card in the Tasks tab: the innermost element holding both its
// id and the "Task Details" title.
function card(id) {
  return page
    .locator("div")
    .filter({ has: page.getByText(`ID: ${id}`, { exact: true }) })
    .filter({ has: page.getByText("Task Details", { exact: true }) })
    .last();
}

// Waits until the task's card shows the status (as the Inspector words it),
// and notes it.
async function waitStatus(id, status, timeout = task) {
  await card(id).getByText(status, { exact: true }).waitFor({ timeout });
  out.sawStatuses.push(status);
}

// The card's "Full Task Object", copied with its Copy button.
async function copyTaskObject(id) {
  await card(id).getByRole("button", { name: "Copy" }).last().click();
  const text = await page.evaluate(() => navigator.clipboard.readText());
  return JSON.parse(text);
}

// The text of the Results panel of the Tools screen once it shows what
// matches shows, whitespace collapsed.
async function results(shows) {
  const panel = page
    .locator("div")
    .filter({ has: page.getByRole("heading", { name: "Results", exact: true }) })
    .filter({ hasText: shows })
    .last();
  await panel.waitFor({ timeout: task });
  return (await panel.innerText()).replace(/\s+/g, " ").trim();
}

// Polls cond (a check of what the page shows, not a wait for an outcome)
// until it holds, or throws what after timeout.
async function until(cond, what, timeout = step) {
  const deadline = Date.now() + timeout;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeout} ms`);
    await page.waitForTimeout(100);
  }
}

// Searches the Tasks tab for the task by its id: it shows that task alone.
async function search(id) {
  await page.getByRole("textbox", { name: "Search", exact: true }).fill(id);
  await until(async () => (await taskIDs()).join() === id, `the Tasks tab searched for ${id} shows it alone`);
}

async function run() {
  switch (which) {
    case "delay": {
      await connect("openwop-modern");
      await selectTool("delay");
      await page.getByRole("textbox", { name: "delayMs" }).fill(delayMs);
      const id = await executeAsTask();
      out.taskId = id;
      out.kind = "task";
      await waitStatus(id, "working", step);
      await search(id);
      await waitStatus(id, "completed");
      out.taskObject = await copyTaskObject(id);
      out.status = out.taskObject.status;
      out.text = await results(/sleptMs/);
      break;
    }
    case "approve": {
      await connect("openwop-modern");
      await selectTool("publish_report");
      await page.getByRole("textbox", { name: "title" }).fill("Inspector web");
      await page.getByRole("textbox", { name: "topic" }).fill("the web client");
      const id = await executeAsTask();
      out.taskId = id;
      out.kind = "task";
      await waitStatus(id, "input required", step);
      await search(id);
      const dialog = page.getByRole("dialog", { name: "Elicitation Request" });
      await dialog.waitFor();
      out.asked = (await dialog.innerText()).replace(/\s+/g, " ").trim();
      await dialog.getByRole("textbox", { name: "action" }).click();
      await page.getByRole("option", { name: "accept", exact: true }).click();
      await dialog.getByRole("button", { name: "Submit" }).click();
      await dialog.waitFor({ state: "hidden" });
      await waitStatus(id, "completed");
      out.taskObject = await copyTaskObject(id);
      out.status = out.taskObject.status;
      out.text = await results(/published at/);
      break;
    }
    case "legacy": {
      await connect("openwop-legacy");
      await selectTool("publish_report");
      await page.getByRole("switch", { name: "Run as task" }).check({ force: true });
      await page.getByRole("textbox", { name: "title" }).fill("Inspector web");
      await page.getByRole("textbox", { name: "topic" }).fill("the legacy era");
      const id = await executeAsTask();
      out.taskId = id;
      out.kind = "task";
      await waitStatus(id, "input required", step);
      // The Inspector polls tasks/get while the task is input_required;
      // give it a few polls to show the question if it would.
      const dialog = page.getByRole("dialog", { name: "Elicitation Request" });
      out.asked = await dialog
        .waitFor({ timeout: 5000 })
        .then(() => dialog.innerText())
        .catch(() => "");
      await card(id).getByRole("button", { name: "Cancel Task" }).click();
      await waitStatus(id, "cancelled", step);
      // What the server holds: connect anew, and the Tasks tab lists the
      // task from tasks/list.
      await page.getByRole("button", { name: "Disconnect from server" }).click();
      await connect("openwop-legacy");
      await search(id);
      await waitStatus(id, "cancelled", step);
      out.taskObject = await copyTaskObject(id);
      out.status = out.taskObject.status;
      break;
    }
    default:
      throw new Error(`unknown case ${which}`);
  }
}

try {
  await run();
} catch (err) {
  out.error = String(err?.stack ?? err);
  out.page = await page
    .locator("body")
    .innerText()
    .catch((e) => `(no page text: ${e})`);
  await page.screenshot({ path: screenshot, type: "jpeg", quality: 60 }).catch(() => {});
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
