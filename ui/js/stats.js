// An answer's statistics line: the model, its calls, tokens and speed, speculative
// decoding, the seconds, and whether the token limit cut the answer off.

/** The line for an answer's `stats` (`AskStats`). */
export function statsLine(s) {
  const parts = [];
  if (s.model) parts.push(s.model.replace(/\.gguf$/i, ""));
  if (s.llm_calls !== undefined) parts.push(`${s.llm_calls} LLM call${s.llm_calls === 1 ? "" : "s"}`);
  if (s.output_tokens !== undefined) parts.push(`${s.output_tokens} tokens`);
  if (s.tokens_per_s) parts.push(`${s.tokens_per_s.toFixed(1)} tokens/s`);
  if (s.draft && s.draft.steps) {
    const per = (s.draft.steps + s.draft.accepted) / s.draft.steps;
    parts.push(`drafted by ${s.draft.by.replace(/\.gguf$/i, "")}, ${per.toFixed(1)} tokens a step`);
  }
  if (s.secs !== undefined) parts.push(`${s.secs.toFixed(1)} s`);
  // The model did not end the answer: the limit did (Settings, Max tokens).
  if (s.cut_off_after) parts.push(`cut off at ${s.cut_off_after} tokens: raise Max tokens in Settings for more`);
  return parts.join(" · ");
}
