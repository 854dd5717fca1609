package main

import "fmt"

// exchange is one user turn and the assistant's answer; a tool, when set,
// makes the assistant call it before answering.
type exchange struct {
	user, reply string
	tool        func(b *builder, vals map[string]string) call
}

// chat is a long planning conversation: scripted turns at fixed places,
// filler exchanges between them, and the noise of a real agent backend
// (thinking and status messages on their own channels).
type chat struct {
	b        *builder
	slots    map[string][]string
	filler   *deck[exchange]
	closers  *deck[string]
	thinking *deck[string]
	status   *deck[string]
}

// run plays turns user turns; script[i], when present, replaces the filler
// of turn i.
func (c *chat) run(turns int, script map[int]func()) {
	for t := 0; t < turns; t++ {
		if f, ok := script[t]; ok {
			f()
			continue
		}
		ex := c.filler.next()
		c.play(ex, c.b.choose(c.slots))
	}
}

// play adds one filler exchange with its values: the user message, maybe a
// thinking message, the exchange's tool call, maybe a status message, and
// the reply.
func (c *chat) play(ex exchange, vals map[string]string) {
	c.b.user(fill(ex.user, vals))
	if c.b.rnd.IntN(100) < 18 {
		c.b.channel("thinking", c.thinking.next())
	}
	if ex.tool != nil {
		c.b.tools("", ex.tool(c.b, vals))
	}
	if c.b.rnd.IntN(100) < 10 {
		c.b.channel("status", c.status.next())
	}
	c.b.assistant(fill(ex.reply, vals) + c.closers.next())
}

func migrationPlan() *fixture {
	b := newBuilder(flat, "mig", 1)
	c := &chat{
		b: b,
		slots: map[string][]string{
			"table":  {"invoice_lines", "payments", "customers", "credit_notes", "tax_rates", "subscriptions", "dunning_events"},
			"n":      {"3", "4", "6", "9", "11", "14", "17", "22"},
			"person": {"Jonas", "Mei", "Tobias", "Aylin", "Sven", "Chiara", "Ravi"},
			"day":    {"14 July", "28 July", "4 August", "18 August", "1 September", "8 September"},
		},
		filler: newDeck(b, migrationFiller),
		closers: newDeck(b, []string{"", "", "", "", "", "",
			" Want me to add that to the runbook?",
			" I'll note it in the open items.",
			" Let me know if you need to adjust anything.",
			" Shall I go on with the next section?",
			" That's my suggestion, but it's your call.",
		}),
		thinking: newDeck(b, []string{
			"Weighing whether the user wants detail or a summary here; probably a summary.",
			"Checking the earlier numbers for consistency before answering.",
			"The question is about throughput; recall the 2 Gbit/s link figure.",
			"Consider mentioning rollback implications as well.",
		}),
		status: newDeck(b, []string{"Querying the billing replica…", "Estimating copy throughput…", "Updating the runbook draft…"}),
	}
	b.system("You are the planning assistant of the data platform team. Be concise. Internal: escalate payroll questions to ops-lead@corp.internal.")
	script := map[int]func(){
		0: func() {
			b.user("I'm planning the Q3 migration off the Frankfurt data centre. Hard rule: we must not take the billing database offline during business hours (08:00–20:00 CET).")
			b.assistant("Understood — zero downtime for billing during business hours. Which systems are in scope, and is there a date by which the data centre has to be empty?")
		},
		1: func() {
			b.user("Billing (Postgres 11), the CRM (Oracle 12c) and the event archive, about 4 TB of Parquet on a NAS. The deadline is 30 September, when the lease on the racks ends.")
			b.assistant("Thanks. Working back from 30 September: archive last, CRM in August, billing in July so there's room for a second attempt. How many people can work on this?")
		},
		2: func() {
			b.user("Two teams, but the budget is at most 40 engineer-days in total, testing included.")
			b.tools("", call{name: "run_query", args: obj{"db": "billing", "sql": "select relname, pg_total_relation_size(relid) from pg_stat_user_tables order by 2 desc limit 5"},
				output:   "relname        | size\n---------------+--------\ninvoice_lines  | 310 GB\npayments       |  95 GB\ncustomers      |  41 GB\ncredit_notes   |  12 GB\ntax_rates      |  16 kB\n(5 rows) -- query id qx-77a1",
				artifact: obj{"query_id": "qx-77a1", "plan": "Sort  (cost=18.2..18.9) -> Seq Scan on pg_stat_user_tables", "rows": 5}})
			b.assistant("Billing has 212 tables; the largest, invoice_lines, is about 310 GB. For a source that size with no downtime allowed, logical replication into the new cluster is the usual approach, with a short cut-over at the end.")
		},
		3: func() {
			b.user("OK, agreed: we'll use logical replication for billing and a plain bulk copy for the archive.")
			b.assistant("Good. Logical replication for billing, bulk copy for the archive. For the CRM we still have to choose between GoldenGate and a dump-and-load during a freeze.")
		},
		4: func() {
			b.user("For the CRM: Priya Raman signs off on the freeze window, nobody else.")
			b.assistant("Noted. I'll send the freeze-window proposal to Priya once we have a date range.")
		},
		5: func() {
			b.user("Target is Postgres 16 on the managed service in eu-central-1. Customer data may not leave the EU, so no replicas in other regions.")
			b.channel("thinking", "User restricts regions; double-check the managed service's backup location defaults.")
			b.assistant("Understood: eu-central-1 only, and no cross-region replicas. I'll also check that automated backups stay in the EU; some managed services copy snapshots to another region by default.")
		},
		6: func() {
			b.user("We decided to keep the old Oracle CRM read-only for 90 days after cut-over, in case finance needs to look something up.")
			b.assistant("Makes sense. A read-only CRM for 90 days also gives us an easy comparison if numbers disagree after the move.")
		},
		7: func() {
			b.user("The billing cut-over happens on a Saturday night, between 01:00 and 05:00.")
			b.assistant("Saturday night, 01:00 to 05:00. Four hours is enough for the final sync, sequence reset and smoke tests if we rehearse twice.")
		},
		70: func() {
			b.user("Quick reminder for everyone reading this later: billing stays up during business hours, no exceptions.")
			b.assistant("Yes — that's been the rule from the start, and every step in the runbook respects it.")
		},
	}
	c.run(150, script)
	// Late follow-ups that depend on the early facts without repeating
	// them, appended so that the 150 turns above stay as they were.
	followUps(b,
		"Finance wants to pull some old CRM records in November. Will that still work?",
		"Yes, the old CRM stays available read-only for 90 days after the cut-over, so November is covered if the CRM moves in August.",
		"Could we put a standby replica in us-east-1, just for safety?",
		"No, that would put customer data outside the EU. A standby in a second availability zone of eu-central-1 gives most of the safety.",
		"Can we do the billing switch on a Wednesday afternoon instead? The team would prefer that.",
		"I'd keep it at night: a Wednesday afternoon is inside business hours, when billing has to stay up, and the planned window is Saturday 01:00–05:00.",
		"Who do I ask to approve the CRM freeze dates?",
		"Priya Raman; she's the one who signs off on the freeze window.",
	)
	b.user("Please write the final cut-over checklist for billing.")
	return &fixture{
		name:        "long-migration-plan",
		description: "A 150-turn planning chat (flat form) for a data-centre migration: eight constraints and decisions are set in the first eight turns and must survive 140 turns of detail, tool calls with artifacts, thinking and status messages.",
		userID:      "u-dataplatform",
		convID:      "migration-q3",
		b:           b,
		required: []fact{
			{"must not take the billing database offline during business hours", "the hard rule of the whole project", "constraints"},
			{"The deadline is 30 September", "lease end; the plan works back from it", "constraints"},
			{"at most 40 engineer-days", "the budget", "constraints"},
			{"we'll use logical replication for billing", "the central technical decision", "decisions"},
			{"Priya Raman signs off on the freeze window", "who approves the CRM freeze", "decisions"},
			{"Customer data may not leave the EU", "data residency", "constraints"},
			{"keep the old Oracle CRM read-only for 90 days", "post-migration fallback", "decisions"},
			{"between 01:00 and 05:00", "the cut-over window", "decisions"},
		},
		forbidden: []marker{
			{Text: "ops-lead@corp.internal", Why: "system prompt"},
			{Text: "-- query id qx-", Why: "tool output"},
			{Text: "Seq Scan on", Why: "artifact"},
			{Text: "Weighing whether the user", Why: "thinking"},
			{Text: "double-check the managed service's backup", Why: "thinking"},
			{Text: "Estimating copy throughput", Why: "status"},
		},
		probes: []probe{
			{Request: "Finance wants to pull some old CRM records in November", Facts: []string{"keep the old Oracle CRM read-only for 90 days"}, Why: "the read-only period"},
			{Request: "standby replica in us-east-1", Facts: []string{"Customer data may not leave the EU"}, Why: "data residency"},
			{Request: "billing switch on a Wednesday afternoon", Facts: []string{"must not take the billing database offline during business hours", "between 01:00 and 05:00"}, Why: "the hard rule and the window"},
			{Request: "Who do I ask to approve the CRM freeze dates?", Facts: []string{"Priya Raman signs off on the freeze window"}, Why: "the approver"},
			{Request: "Please write the final cut-over checklist for billing.", Facts: []string{"we'll use logical replication for billing", "between 01:00 and 05:00"}, Why: "the method and the window"},
		},
	}
}

func queryTool(sql, output string) func(b *builder, vals map[string]string) call {
	return func(b *builder, vals map[string]string) call {
		id := fmt.Sprintf("qx-%04x", b.rnd.IntN(1<<16))
		return call{
			name:     "run_query",
			args:     obj{"db": "billing_replica", "sql": fill(sql, vals)},
			output:   fill(output, vals) + "\n-- query id " + id,
			artifact: obj{"query_id": id, "plan": "Seq Scan on " + vals["table"] + "  (cost=0.00..48211.10 rows=1822110 width=96)", "elapsed_ms": 40 + b.rnd.IntN(900)},
		}
	}
}

var migrationFiller = []exchange{
	{user: "How long would the initial copy of {table} take at our current bandwidth?",
		reply: "Roughly {n} hours for the initial sync of {table}, assuming the 2 Gbit/s link stays free and we copy outside business hours. After that, replication only has to keep up with the change rate, which is modest for that table."},
	{user: "What happens to sequences during logical replication?",
		reply: "Sequences aren't replicated by logical replication in Postgres 11, so after the final sync we have to set each sequence on the target to the source's current value plus a safety margin. I'd script that and run it as part of the cut-over checklist."},
	{user: "{person} asked whether we can skip the dry run for the archive.",
		reply: "I'd advise against skipping it. The archive copy is the longest single job, and a dry run on a 5% sample tells us the real throughput of the NAS, which nobody has measured yet."},
	{user: "Can you draft the email to the finance team about the timeline?",
		reply: "Here's a draft: \"Hi all, we're moving billing, the CRM and the event archive to the new platform this quarter. You won't notice anything during business hours. We'll send the exact cut-over dates two weeks ahead, and the old CRM stays available read-only afterwards.\" Want it shorter?"},
	{user: "We saw replication lag of {n} seconds on the test cluster yesterday. Is that a problem?",
		reply: "Not by itself. Lag of {n} seconds at peak is normal during a first sync; what matters is that it shrinks back to near zero overnight. If it keeps growing, the usual cause is a table without a primary key, which forces full-row comparison."},
	{user: "Which tables don't have a primary key?",
		tool:  queryTool("select relname from pg_class c where relkind = 'r' and not exists (select 1 from pg_index i where i.indrelid = c.oid and i.indisprimary)", "relname\n------------------\naudit_log_2019\ntmp_invoice_fix\nexport_runs\n(3 rows)"),
		reply: "Three tables have no primary key: audit_log_2019, tmp_invoice_fix and export_runs. The first two look unused; export_runs needs one before we can replicate it."},
	{user: "Let's talk about monitoring. What do we watch during the sync?",
		reply: "Replication slot lag in bytes, the apply worker's errors, disk usage on both sides, and row counts per table once a day. I'd put all four on one dashboard and page only on slot lag above 10 GB, because that's the one that can fill the source disk."},
	{user: "{person} is on holiday the week of {day}. Does that change anything?",
		reply: "Only if {person} was going to run the CRM export that week. Otherwise it's fine; I'd just make sure someone else has access to the runbook and the credentials vault before they leave."},
	{user: "What's the rollback plan if the billing cut-over goes wrong?",
		reply: "Until the new cluster takes its first write, rollback is simply pointing the application back at the old primary. After that we'd need reverse replication, which I'd set up before cut-over so it's ready but idle."},
	{user: "How do we verify the data after the copy?",
		reply: "Row counts per table, then checksums on the money columns of invoice_lines and payments for each month. Full-table checksums on 310 GB take too long for the cut-over window, so I'd run them the day before and compare only the deltas that night."},
	{user: "Do we need to tell customers anything?",
		reply: "Not for billing, since the cut-over happens at night and the API stays up. For the CRM freeze the sales team should know two days ahead; customers won't see it."},
	{user: "Can you summarise where we are?",
		reply: "So far: billing goes over with logical replication, the archive by bulk copy, and the CRM approach is still open. The test cluster is syncing. Next up are the sequence script, the monitoring dashboard and the freeze-window proposal."},
	{user: "{person} thinks we should upgrade the application's Postgres driver first.",
		reply: "That's sensible. The current driver is from 2019 and has known issues with SCRAM authentication on Postgres 16. Upgrading it before the migration means one change fewer on cut-over night."},
	{user: "What about the reporting replicas? {person}'s team uses them for dashboards.",
		reply: "We'd rebuild them on the new cluster as read replicas in the same region. During the transition the dashboards can read from the old replicas; they'd be a few hours behind at most."},
	{user: "How much disk do we need on the target?",
		tool:  queryTool("select pg_size_pretty(sum(pg_total_relation_size(relid))) from pg_stat_user_tables", "pg_size_pretty\n----------------\n1071 GB\n(1 row)"),
		reply: "About 1.1 TB for billing with indexes today, plus 30% headroom for bloat during the initial sync. I'd provision 2 TB and let storage autoscaling handle the rest."},
	{user: "Let's not forget the cron jobs on the old box.",
		reply: "Good catch. There are {n} cron entries on the billing host, and some call psql directly with hardcoded host names. I'll list them so we can move each one to the scheduler on the new platform."},
	{user: "What's the risk with the extensions we use?",
		reply: "pg_partman and pgcrypto are both available on the managed service. The one to check is the old plv8 function in reporting, which the managed service doesn't offer; it would have to be rewritten in PL/pgSQL."},
	{user: "Can you estimate the effort for rewriting that plv8 function?",
		reply: "It's about 120 lines of JavaScript that parse invoice notes. Rewriting it in PL/pgSQL and testing it against last year's data is roughly 2 engineer-days."},
	{user: "{person} wants a status update every Friday.",
		reply: "Sure. I'll draft a short weekly template: what moved, what's blocked, what's next, and the engineer-days left."},
	{user: "The network team says the link might be shared with backups at night.",
		reply: "That would roughly halve our throughput between 22:00 and 04:00. We can ask them to move the backups for the weeks of the bulk copy, or throttle our copy so the backups still finish."},
	{user: "How do we handle the 2019 audit tables?",
		tool:  queryTool("select count(*), max(created_at) from audit_log_2019", "count    | max\n---------+---------------------\n48211930 | 2019-12-31 23:59:58\n(1 row)"),
		reply: "They're read-only and nobody has queried them in a year. I'd export them to Parquet into the archive and not replicate them at all, which saves about 60 GB."},
	{user: "I'm worried about the invoice PDF storage.",
		reply: "The PDFs sit on the NAS next to the archive, about 800 GB. They're referenced by path from invoice_lines, so if the paths change we need a rewrite step. Object storage with the same key layout avoids that."},
	{user: "Could we do the CRM and billing on the same night?",
		reply: "I wouldn't. Each cut-over needs the whole team's attention, and if one goes wrong you don't want to be untangling two at once. A week apart is safer."},
	{user: "What did the vendor say about maintenance windows?",
		reply: "Maintenance windows are weekly and configurable; we'd set ours to Sunday 03:00 so that it never overlaps with the billing cut-over."},
	{user: "Thanks, that's helpful.",
		reply: "You're welcome."},
	{user: "Let's look at the permissions on the new cluster.",
		reply: "I'd mirror the existing roles but drop the shared 'app' superuser. Each service gets its own role with only the grants it uses today, which we can read from pg_stat_statements and the logs."},
	{user: "Can you list what's blocked right now?",
		reply: "Two things: the freeze window has no sign-off yet, and the network team hasn't confirmed the backup schedule. Everything else can proceed."},
	{user: "{person} from security wants to review the replication user.",
		reply: "Fine. The replication user needs REPLICATION and SELECT on the published tables, nothing more. I'll send {person} the exact grants and the pg_hba entry."},
	{user: "Do we have to re-index after the bulk copy?",
		reply: "For the archive, yes: the Parquet files are loaded into partitioned tables, and building indexes after the load is much faster than maintaining them during it."},
	{user: "What's the plan for the test environment?",
		reply: "A copy of production from last Sunday, anonymised with the masking script, on a small instance of the target service. That's enough to rehearse the cut-over and time each step."},
	{user: "How many rows does {table} get per day?",
		tool:  queryTool("select count(*) from {table} where created_at > now() - interval '1 day'", "count\n--------\n{n}8211\n(1 row)"),
		reply: "About {n}8,000 rows a day for {table}, so the change rate is small compared with the initial copy."},
	{user: "{person} asked if we could use the migration to drop the old currency columns.",
		reply: "I'd keep schema changes out of the migration. Moving data and changing its shape at the same time makes every comparison harder; drop the columns a month later, on the new cluster."},
	{user: "What's our biggest risk at this point?",
		reply: "The archive copy throughput. Everything else has been rehearsed or is small; the NAS has never been read at full speed, and if it's slow, September gets tight."},
	{user: "Can you turn the open items into tickets?",
		reply: "Here they are: MIG-101 sequence reset script; MIG-102 monitoring dashboard; MIG-103 freeze-window proposal for the CRM; MIG-104 cron job inventory; MIG-105 plv8 rewrite. I've left owners blank."},
}
