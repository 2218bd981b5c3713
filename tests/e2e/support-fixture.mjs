// The scripted answer that support.test.mjs (the browser) and tauri-support.test.mjs
// (the window) check: a two-page PDF of known sentences, a question about it, and the
// scripted model's reply to a citation prompt — one sentence copied from the PDF and
// citing its own numbered source, one invented, one copied but citing a source that
// does not hold it.
import { numberedSources } from "./scripted-llm.mjs";

export const PAGES = [[
  "The Verrin lighthouse stands on the northern cape of Halden Island.",
  "Its lamp was first lit in 1874 by the keeper Ada Morrow.",
  "The tower is built of grey granite quarried on the island itself.",
  "Visitors climb 212 steps to reach the lantern gallery.",
], [
  "The keeper logs the weather every three hours in a bound ledger.",
  "Fog signals sound twice a minute whenever visibility falls below two miles.",
  "The lantern gallery is closed to visitors during winter storms.",
  "A small museum beside the tower shows the original Fresnel lens.",
]];
/** On page 2. */
export const SUPPORTED = "Fog signals sound twice a minute whenever visibility falls below two miles";
export const INVENTED = "The lighthouse was painted bright purple by a famous Venetian sculptor in 1990.";
/** On page 1, cited as a source that does not hold it. */
export const MISCITED = "Visitors climb 212 steps to reach the lantern gallery";
export const QUESTION = "How often do the Verrin fog signals sound, and how many steps lead to the lantern gallery?";

/** A question the scripted model answers mostly with inventions (1 of 3 sentences is
 *  the PDF's), and one it fails on. */
export const DOUBTFUL = "What does the museum beside the Verrin lighthouse show?";
export const FAILING = "When is the Verrin lantern gallery closed to visitors?";
export const DOUBTFUL_ANSWER = "The museum shows a stuffed polar bear brought from Greenland. " +
  "It also keeps a golden telescope donated by a sea captain in 1955. " +
  "A small museum beside the tower shows the original Fresnel lens.";

/** A question the scripted model only restates (its answer holds no word the question
 *  lacks), as small models do, over the whole source; asked again over the passage
 *  that answers it best (no "northern cape" in the prompt), it answers. */
export const RESTATING = "How many steps do visitors climb to reach the Verrin lantern gallery?";
export const RESTATED = "Visitors climb steps to reach the Verrin lantern gallery.";
export const ANSWERED_AGAIN = "Visitors climb 212 steps to reach the lantern gallery.";

/** A table of options, and a question about one of its rows that the scripted model
 *  answers from the wrong row over the whole table (a sentence no row holds), and
 *  right over the answering row alone (no "quillwidth" in the prompt). */
export const TABLE_ROWS = [["quillwidth", "length", "The width of the quill margin"], ["inkcolor", "name", "The colour of the ink pot"],
  ["blotter", "boolean", "Whether a blotter dries each page"], ["nibstyle", "choice", "The nib: broad, fine or italic"]];
export const TABLE_PAGE = ["2.3 Package options", "The scriptorium package takes these options, each described below.",
  "Table 1: Options of the scriptorium package.", "", [[72, "Option"], [200, "Type"], [300, "Meaning"]],
  ...TABLE_ROWS.map((r) => [[72, r[0]], [200, r[1]], [300, r[2]]]), "", "Load it with the usual command; the options go between brackets."];
export const TABLE_QUESTION = "Which scriptorium option sets the colour of the ink pot?";
export const WRONG_ROW = "The quillwidth option, a length, sets the colour of the ink pot.";
export const RIGHT_ROW = "The inkcolor option, a name, is the colour of the ink pot.";

/** The scripted reply to `prompt` (its numbered sources decide the markers). */
export function scriptedAnswer(prompt) {
  if (prompt.includes(FAILING)) return null;
  if (prompt.includes(TABLE_QUESTION)) return prompt.includes("quillwidth") ? WRONG_ROW : RIGHT_ROW;
  if (prompt.includes(RESTATING)) return prompt.includes("northern cape") ? RESTATED : ANSWERED_AGAIN;
  if (prompt.includes(DOUBTFUL)) return DOUBTFUL_ANSWER;
  const sources = [...numberedSources(prompt)];
  const right = sources.find(([, t]) => t.includes(SUPPORTED))?.[0] ?? 1;
  const wrong = sources.find(([, t]) => !t.includes(MISCITED) && !t.includes("212"))?.[0] ?? 1;
  return `${SUPPORTED} [${right}]. ${INVENTED} ${MISCITED} [${wrong}].`;
}
