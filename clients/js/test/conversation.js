// A long conversation for the adapters' tests against recall (its first
// turn sets a rule, hundreds of ordinary turns follow, and the last request
// is one the rule decides), and the latency the adapters report.

export const RULE = "we must never store card numbers in our own database";

const TOPICS = ["refunds", "invoices", "payouts", "chargebacks", "subscriptions", "taxes", "discounts", "shipping fees", "exchange rates", "late fees"];

/** The user's and the assistant's text of each of n turns, the last request last. */
export function conversation(n) {
  const turns = [
    {
      user: `Hard rule for the whole project: ${RULE}. The payment provider keeps them.`,
      assistant: "Understood: card numbers stay with the payment provider, and our tables keep only its token.",
    },
  ];
  for (let i = 1; i < n - 1; i++) {
    const topic = TOPICS[i % TOPICS.length];
    const a = 1000 + ((i * 37) % 900), b = 1000 + ((i * 53) % 900);
    turns.push({
      user: `Week ${i}: the ${topic} report shows ${a} entries against ${b} the week before. Which accounts moved the most, and is the change within the usual range for ${topic}?`,
      assistant: `In week ${i} the ${topic} went from ${b} to ${a} entries. The largest moves were on accounts ${100 + (i % 17)} and ${200 + (i % 23)}; the change is within the usual range, so no follow-up is needed.`,
    });
  }
  turns.push({ user: "Now write the migration for the payments table: which columns do we keep for each card?", assistant: "Here is the migration." });
  return turns;
}

function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

const fmt = (values) => `p50 ${percentile(values, 50).toFixed(1)} ms, p99 ${percentile(values, 99).toFixed(1)} ms`;

/**
 * The latency an adapter added to each call, from its onPrompt reports:
 * all of it, recall's POST …/context within it, and the adapter's own work.
 */
export function latency(infos) {
  const ms = infos.map((i) => i.ms);
  const recall = infos.map((i) => i.recallMs ?? 0);
  const own = infos.map((i) => i.ms - (i.recallMs ?? 0));
  return `added latency over ${ms.length} calls against local recall ${fmt(ms)} (max ${Math.max(...ms).toFixed(1)} ms); recall's POST …/context ${fmt(recall)}; the adapter's own work ${fmt(own)}`;
}
