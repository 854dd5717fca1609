package main

// b2bIntegration is a product manager briefing an agent on a B2B
// integration (flat form): every user message is several paragraphs long,
// and the facts sit in the middle of them among sentences that are not
// facts; most of the facts carry no keyword.
func b2bIntegration() *fixture {
	s := &script{
		name:        "long-b2b-integration",
		description: "English, flat form: a product manager who writes long multi-paragraph messages briefs an agent on an order integration with a logistics customer over 100 turns. Facts are single sentences in the middle of 6–12-sentence messages (the customer's ERP, the API rate, the pilot site, the contact and her preference, the invoice reference, the promised date, data residency, the sandbox reset), most without a keyword; ERP and ticket output with \"must\", \"required\", \"deadline\"; late requests, written as long as the rest, refer back.",
		userID:      "u-pm-dana",
		convID:      "halvorsen-integration",
		form:        flat,
		seed:        301,
		system:      "You are the integration assistant of the partnerships team. Answer in prose, keep answers shorter than the questions. Internal escalation alias: partners-oncall-5527.",
		slots: map[string][]string{
			"intro": {
				"Morning! I just came out of the weekly sync with sales and wanted to get a few things written down before the next meeting eats my brain.",
				"Okay, I finally have a quiet hour, so here is a longer one.",
				"Sorry for the wall of text again, it has been one of those days.",
				"Quick context before my question, because I think it matters.",
				"I was on the train back from the customer visit and started making notes, so bear with me.",
				"Good afternoon, hope your day is calmer than mine.",
				"So, I talked to engineering over lunch and came away with more questions than answers.",
				"I've been going back and forth on something and would like a second opinion.",
				"Happy Friday, or almost.",
				"Picking this back up after the all-hands.",
				"Right, where were we.",
				"Long message incoming, sorry, I think better when I write.",
				"I promised myself I would clear my inbox today and this thread is the last thing in it.",
			},
			"ctxA": {
				"The sales team keeps asking me for dates, which I refuse to give until engineering has looked at the scope properly.",
				"Our CEO mentioned the account in the board deck, so there is some visibility on this whether we like it or not.",
				"I also had a chat with finance about how we recognise the setup fee, which was less boring than it sounds.",
				"Half of the team is out with the flu this week, so everything moves a little slower.",
				"I'm trying to keep the scope small, because the last integration we did grew three new features before it shipped.",
				"I reread the discovery notes from the first workshop last night and they hold up surprisingly well.",
				"There is also a reorg rumour going around, which I'm ignoring until someone tells me something official.",
				"Our designer thinks we should build a proper admin screen for mappings, and I half agree with her.",
				"The support team asked to be looped in earlier this time, which is fair after last quarter.",
				"I've started a shared doc for the open questions, but honestly this thread is more useful.",
				"Marketing wants a case study out of this eventually, which is a nice problem to have.",
				"We had a good retro on the previous partner project and I want to avoid repeating its mistakes.",
			},
			"ctxB": {
				"Anyway, I don't need a perfect answer, just something I can take to the team.",
				"I'll probably forward your answer to the tech lead as is, so write it for him too.",
				"If this is a dumb question, tell me, I'd rather know now.",
				"I know we touched on something similar before, but my memory is a sieve this week.",
				"Bullet points are fine if that's easier.",
				"I'm mostly trying to understand the trade-off, not to make a call today.",
				"Feel free to push back if you think I'm overcomplicating it.",
				"My gut says it's simple, but my gut has been wrong about integrations before.",
				"The team will ask me about this in standup tomorrow, so a short version helps.",
				"There's no customer pressure on this particular point, it's more for my own peace of mind.",
				"I'd also love to know what other teams usually do here.",
				"Take your time, I'm in meetings for the next two hours anyway.",
			},
			"bye": {
				"Thanks as always!",
				"Cheers.",
				"Talk soon.",
				"Thanks, you're a lifesaver.",
				"Appreciate it.",
				"Off to the next meeting now.",
				"That's it for now, more later probably.",
				"Thank you!",
				"Okay, coffee time.",
			},
			"n":    {"3", "4", "6", "8", "12"},
			"team": {"support", "finance", "the warehouse integration squad", "legal", "customer success"},
		},
		filler:   integrationFiller,
		acks:     integrationAcks,
		distinct: true,
		closers: []string{"", "", "", "", "", "",
			" Want me to put that into the shared doc?",
			" I can draft a short note for the tech lead if that helps.",
			" Happy to go deeper on any of that.",
		},
		thinking: []string{
			"Long message again; find the actual question before answering.",
			"The user mixes context and questions; answer the question, skip the context.",
			"Check whether this touches the pilot scope before answering.",
			"Keep it short; the PM forwards answers to the tech lead.",
		},
		status: []string{"Reading the integration spec…", "Searching the partner ticket queue…", "Summarising the thread…"},
		turns:  100,
		at: map[int]step{
			0: say("Hi! I'm Dana, the product manager for our partner integrations, and I'd like to use this thread as the running brief for the Halvorsen Logistics project over the next couple of months. "+
				"Some background first: Halvorsen is a mid-sized logistics company out of Norway, they signed with us in December after a long evaluation, and they are easily the biggest account my team has landed this year. "+
				"The commercial side was handled by Jonas from sales, who is lovely but tends to promise things, so I'll be filtering what he says for you. "+
				"On the technical side, their ERP is SAP S/4HANA on premise, release 2021, and everything we build has to talk to that in the end. "+
				"They have a small internal IT team that is stretched thin, so most of the integration work will be on our side. "+
				"I'll be writing long messages, sorry in advance, I tend to think out loud. "+
				"For today I mainly want you to get a feel for the project. "+
				"Could you start by telling me what you'd want to know first about a customer like this?",
				"Nice to meet you, Dana. For a customer like this I'd want to know, first, what data flows in which direction (orders in, shipment status out?), then the interfaces their SAP side exposes (IDocs, OData, a middleware), the volumes and their peaks, who their technical contact is, and what the pilot looks like. Those five decide most of the design."),
			1: say("Great list, let me go through the ones I know. "+
				"Data mostly flows one way at first: we send them confirmed orders, and they send back shipment status a few times a day. "+
				"They have an API gateway in front of the SAP system that their IT team built two years ago, and they are quite proud of it. "+
				"Their API gateway throttles us at 20 requests per second across all endpoints, and apparently there is no way to get that raised for a pilot. "+
				"Volumes are harder, Jonas said thousands of orders a day, but I suspect it's closer to a few hundred outside the Christmas season. "+
				"I'll try to get real numbers from their ops lead next week. "+
				"Does any of that change how you'd approach it?",
				"It does: with a shared rate limit on the gateway, the sync has to be a queue-based worker with a token bucket rather than a call per order, and the status polling has to share the same budget. A few hundred orders a day fits comfortably; the peaks are what we need the real numbers for."),
			2: seq(say("That makes sense, and I like the queue idea because our support team can see what's stuck. "+
				"On a different note, I spent yesterday with their warehouse people, which was more fun than expected, they gave us a tour and a very good lunch. "+
				"They have three warehouses, Oslo, Rotterdam and Hamburg, and each runs slightly differently. "+
				"The pilot goes live with the Rotterdam warehouse first, Hamburg and Oslo follow once we're happy with it. "+
				"Rotterdam has the cleanest processes and the most patient site manager, which is why we picked it together. "+
				"The site manager, Pieter, even offered to run test shipments himself. "+
				"I think that's it for now, I'll write more after the weekend.",
				"Noted. Starting with the tidiest site is a good call; a patient site manager who runs test shipments himself is worth a lot in a pilot. Enjoy the weekend."),
				thinks("Pilot site recorded; Hamburg and Oslo later.")),
			4: say("Back with more, and with coffee this time. "+
				"I had a call with their IT team this morning about who we should talk to day to day. "+
				"Marit Olsen is our contact on their side, and she prefers email over calls, she said calls tend to eat her afternoons. "+
				"She's been at Halvorsen for fifteen years and knows the SAP setup better than anyone. "+
				"Her English is excellent, by the way, so no worries about language. "+
				"She also mentioned that she'll be away for two weeks in April, but we'll cross that bridge later. "+
				"Could you keep a short list of who is who on their side as we go? "+
				"It's getting hard to keep track.",
				"Sure. On their side so far: Marit Olsen (IT, your day-to-day contact, prefers email), Pieter (Rotterdam site manager, offered test shipments), and their ops lead for volumes. On ours: you and Jonas from sales."),
			6: toolTurn("Small favour before my next call, which starts in ten minutes. "+
				"Can you pull up the ticket that Jonas opened about the kickoff, and tell me what's in it? "+
				"I have a feeling he wrote half a novel, as usual. "+
				"I just want the parts that affect us, not the sales pitch. "+
				"He means well, and the customer loves him, so I'm not complaining, just filtering.",
				"The ticket is mostly the sales summary. For us: they expect a kickoff within three weeks, Jonas listed SAP as the ERP, and he mentions a hard date he \"discussed\" with them, which I'd confirm with you before treating as real.",
				call{name: "search_tickets", args: obj{"query": "Halvorsen kickoff", "queue": "partners"},
					output:   "PART-4412 Halvorsen kickoff (opened by jonas.k). Customer MUST receive kickoff agenda 48h ahead. Required attendees: IT lead, warehouse lead. Deadline discussed with customer: end of Q1 (not confirmed). Decided in call: weekly status email.",
					artifact: obj{"ticket": "PART-4412", "watchers": []string{"dana", "jonas.k"}, "priority": "P2"}}),
			12: say("I've got an update from their finance department, which came in via Marit, of course, by email. "+
				"Their accounts payable team has been burned by vendors before, so they are quite strict about paperwork. "+
				"Every invoice we send has to carry their purchase order number in the reference field, otherwise their AP team rejects it automatically and we wait another month. "+
				"It sounds trivial, but our billing system puts the PO number in a free-text note by default, which their scanner ignores. "+
				"Finance on our side has been informed and they were not thrilled. "+
				"I'm telling you mostly so that it's somewhere in writing. "+
				"Anything else you'd check on the billing side while we're at it?",
				"Worth having in writing. I'd also check the invoice currency (NOK or EUR), whether they need one invoice per site, and the payment terms; and ask our finance team to test the reference field with a dummy invoice before the first real one."),
			18: toolTurn("Another small one today, the big questions can wait until after the sprint review. "+
				"Can you check what their gateway documentation says about batch sizes? "+
				"Engineering asked, and I'd rather not bother their side for something that's written down somewhere. "+
				"The documentation lives in the shared space they gave us access to last month. "+
				"If it's not in there, just say so and I'll ask.",
				"Their docs allow up to 200 orders per batch call and suggest exponential backoff on HTTP 429. Batching 200 at a time stays well inside the gateway's request rate.",
				call{name: "read_doc", args: obj{"space": "halvorsen-shared", "page": "API gateway guide"},
					output: "Halvorsen API Gateway v3. Batch endpoint: max 200 orders per call. Clients MUST implement exponential backoff on 429. Authentication required: OAuth2 client credentials. Decommission deadline for v2: 2027-06-30. Never send PII in query strings."}),
			30: say("Big news, and I'm a bit nervous about it. "+
				"Jonas had dinner with their COO last night, and by the time dessert came he had agreed a date for the pilot. "+
				"We promised them the Rotterdam pilot would be live by the 14th of March, and their COO has already told his board. "+
				"I'm not thrilled about how it happened, but the date itself is doable if we don't add anything to the scope. "+
				"The tech lead did a rough estimate this morning and thinks we have about two weeks of buffer. "+
				"So from now on, every new request gets measured against that date. "+
				"I'd love a rough plan of milestones backwards from it when you have a moment.",
				"Understood. Working back from 14 March: end-to-end test with Pieter's test shipments in the first week of March, sandbox integration complete mid-February, mapping signed off by Marit end of January. That leaves the two weeks of buffer between sign-off and sandbox."),
			45: say("I had a slightly stressful call with our legal team this afternoon, so let me unload here. "+
				"Halvorsen's data protection officer sent over their data processing agreement, and legal went through it line by line. "+
				"Most of it is standard and we've signed similar ones before. "+
				"The one point that matters for engineering is that their customer addresses may not leave the EU at any point, including backups and logs. "+
				"Our default setup puts logs in the US region, so someone will need to look at that. "+
				"Legal also wants a list of sub-processors, which I'll handle. "+
				"I'm mostly telling you so that you keep it in mind whenever we talk about infrastructure.",
				"Good to know early. Logs and backups are the usual leaks; for this customer, everything holding their addresses (database, queue, logs, backups) would have to be in an EU region."),
			60: seq(userSays("One more piece of trivia that cost our QA engineer most of his morning. "+
				"He came in early to run the regression tests against their sandbox and half the test orders he created last week were gone. "+
				"After a lot of head scratching and one email to Marit, it turns out their sandbox is wiped and restored from a template every Sunday night. "+
				"Nobody had told us, and it's not in any of their documents. "+
				"He was a good sport about it, but he did say some words I won't repeat here. "+
				"Anyway, that's the story of my morning."),
				reports("Updating the test plan…"),
				replies("Poor guy. That's useful to know: test data in their sandbox should be created by the test run itself rather than kept from the week before.")),
			82: say("The sprint planning went well today, for once, and the team is in a good mood. "+
				"Engineering is about to size the order sync worker and they asked me how many calls per second they can make, counting the status polling. "+
				"I'd rather not guess and get us blocked in the middle of the pilot. "+
				"Our tech lead wants a single number he can put in the config. "+
				"What should I tell him, and should the status polling get its own share?",
				"Their gateway allows 20 requests per second in total, across all endpoints, so the number has to cover both. I'd give the order sync 15 and the status polling 5, with backoff on 429 in both."),
			85: say("Different topic, and a nice one for a change. "+
				"The onboarding team wants to send someone on site for the go-live week to train the warehouse staff. "+
				"They asked me which address to book the hotel near, and I realised I should double check with you before I answer. "+
				"Flights are cheap right now, so they want to book today. "+
				"Lena from onboarding has done three of these trips already and knows the drill. "+
				"Which site should they go to?",
				"Rotterdam: the pilot goes live there first, and Hamburg and Oslo follow later. Pieter, the site manager, would be the person to meet."),
			88: say("I need to walk someone on their side through the field mapping, and I was going to put a one-hour video call in the calendar for Thursday. "+
				"It's about forty fields, some of them with odd conversions. "+
				"Our engineers did a great job on the document, it's clear and has examples for every field. "+
				"I'd like to get it signed off before the end of the month. "+
				"Is a call the best way to do this, or would you do it differently?",
				"Marit prefers email over calls, so I'd send her the mapping as a document with the odd conversions highlighted and offer a short call only if she wants one."),
			91: say("Infrastructure asked whether they can put the staging copy of the Halvorsen data in our Virginia region, because that's where the staging cluster already lives and it would save them a week of setup. "+
				"It's tempting, because that week matters for the date. "+
				"They were quite apologetic about asking, to be fair, and said they'd understand a no. "+
				"I told them I'd get back to them by the end of the day. "+
				"What do you think?",
				"No: their customer addresses may not leave the EU, including staging, backups and logs. Staging for this customer needs an EU region, even if it costs the week."),
			94: say("QA ran the end-to-end suite against their sandbox this Monday morning and about a third of the tests failed with 'order not found'. "+
				"Nothing changed in our code since Friday, I checked with the team. "+
				"The same suite was green on Friday afternoon, every single test. "+
				"Our QA engineer is understandably grumpy about it. "+
				"Any idea what might be going on before I escalate it to Marit?",
				"Probably their weekly reset: the sandbox is wiped every Sunday night, so orders created before the weekend are gone on Monday. Have the suite create its own orders at the start of each run."),
			96: say("Finance is about to send the first invoice for the setup fee and asked me whether there is anything special about this customer. "+
				"They have a template they use for everyone. "+
				"It's a big moment, the first money from the biggest account of the year! "+
				"I'd hate for it to bounce for something silly. "+
				"I remember there was something, but I don't remember what.",
				"Yes: their purchase order number has to be in the invoice's reference field, not in the free-text note, or their accounts payable team rejects it automatically."),
			98: say("The tech lead is writing the technical design doc today and wants one line about which system on the customer's side we ultimately integrate with, including the version. "+
				"He doesn't want to write 'their ERP' and be vague about it. "+
				"He's a stickler for precision, which I appreciate most days. "+
				"The doc goes to their IT team for review too, so it should be right. "+
				"What should that line say?",
				"That we integrate through Halvorsen's API gateway with SAP S/4HANA on premise, release 2021."),
		},
		last: "It's Thursday already and the week flew by. " +
			"Could you write the status email I send to their side at the end of this week? " +
			"Keep it short, say where we are against the date we committed to, and remember who it goes to. " +
			"Mention the good test results from Rotterdam, but don't oversell them. " +
			"I'll read it over breakfast tomorrow and send it before nine.",
		required: []fact{
			{Text: "their ERP is SAP S/4HANA on premise, release 2021", Why: "the customer's system, mid-paragraph, no keyword", Bucket: "recent_context"},
			{Text: "Their API gateway throttles us at 20 requests per second across all endpoints", Why: "the rate limit, no keyword", Bucket: "constraints"},
			{Text: "The pilot goes live with the Rotterdam warehouse first", Why: "the pilot site, no keyword", Bucket: "decisions"},
			{Text: "Marit Olsen is our contact on their side, and she prefers email over calls", Why: "contact and preference, no keyword", Bucket: "recent_context"},
			{Text: "has to carry their purchase order number in the reference field", Why: "invoice rule, mid-paragraph", Bucket: "constraints"},
			{Text: "We promised them the Rotterdam pilot would be live by the 14th of March", Why: "the committed date, no keyword", Bucket: "decisions"},
			{Text: "their customer addresses may not leave the EU at any point", Why: "data residency", Bucket: "constraints"},
			{Text: "their sandbox is wiped and restored from a template every Sunday night", Why: "environment quirk, no keyword", Bucket: "recent_context"},
		},
		forbidden: []marker{
			{Text: "partners-oncall-5527", Why: "system prompt"},
			{Text: "Customer MUST receive kickoff agenda", Why: "ticket output"},
			{Text: "Deadline discussed with customer", Why: "ticket output"},
			{Text: "Decided in call: weekly status email", Why: "ticket output"},
			{Text: "Clients MUST implement exponential backoff", Why: "documentation output"},
			{Text: "Decommission deadline for v2", Why: "documentation output"},
			{Text: "Never send PII in query strings", Why: "documentation output"},
			{Text: "Pilot site recorded", Why: "thinking"},
			{Text: "Searching the partner ticket queue", Why: "status"},
		},
		probes: []probe{
			{Request: "how many calls per second they can make", Facts: []string{"Their API gateway throttles us at 20 requests per second"}, Why: "the rate limit"},
			{Request: "Which site should they go to?", Facts: []string{"The pilot goes live with the Rotterdam warehouse first"}, Why: "the pilot site"},
			{Request: "Is a call the best way to do this", Facts: []string{"she prefers email over calls"}, Why: "the contact's preference"},
			{Request: "staging copy of the Halvorsen data in our Virginia region", Facts: []string{"their customer addresses may not leave the EU at any point"}, Why: "data residency"},
			{Request: "failed with 'order not found'", Facts: []string{"their sandbox is wiped and restored from a template every Sunday night"}, Why: "the weekly reset"},
			{Request: "anything special about this customer", Facts: []string{"has to carry their purchase order number in the reference field"}, Why: "the invoice rule"},
			{Request: "which system on the customer's side we ultimately integrate with", Facts: []string{"their ERP is SAP S/4HANA on premise, release 2021"}, Why: "the ERP"},
			{Request: "the status email I send to their side", Facts: []string{"We promised them the Rotterdam pilot would be live by the 14th of March", "Marit Olsen is our contact on their side"}, Why: "the date and the recipient"},
		},
	}
	return s.build("b2b")
}

var integrationFiller = []exchange{
	{user: "{intro} {ctxA} I've been wondering how we should handle orders that fail validation on our side before they ever reach the customer. Do we retry them, park them, or tell someone? {ctxB} {bye}",
		reply: "Park them in a dead-letter queue with the validation error and alert {team} once a day with a summary; retrying an order that fails validation only fails again."},
	{user: "{intro} {ctxA} Our designer asked what the error messages for the warehouse staff should look like when an order can't be synced. I said I'd ask you. Should they be technical or plain? {ctxB} {bye}",
		reply: "Plain, with one action each: \"This order wasn't sent because the postcode is missing; fix it in the order screen and it will be resent.\" Keep the technical detail in a collapsible section for support."},
	{user: "{intro} {ctxA} Someone in standup asked whether we should write our own SDK for their API or just call it directly. I have no strong opinion. What would you do? {ctxB} {bye}",
		reply: "Call it directly through a thin client in our code: one customer, a handful of endpoints. An SDK pays off only from the third or fourth customer on the same platform."},
	{user: "{intro} {ctxA} How do other teams usually monitor an integration like this once it's live? I want to have an answer ready when {team} asks. {ctxB} {bye}",
		reply: "A dashboard with orders sent, accepted and rejected per hour, the queue depth and the age of the oldest queued order; alert on the age, not the count, because a stuck queue is what hurts."},
	{user: "{intro} {ctxA} I'm putting together a risk list for the steering meeting and I have {n} items so far, mostly about people rather than tech. What technical risks would you add? {ctxB} {bye}",
		reply: "Three: mapping mismatches found late (units, address formats), the customer's test environment not matching production, and the status feed going silent without anyone noticing."},
	{user: "{intro} {ctxA} What's the difference between an idempotency key and a deduplication check, in words I can repeat to a non-engineer? {ctxB} {bye}",
		reply: "An idempotency key is a label we put on a request so that sending it twice has the same effect as once; a deduplication check is the receiver looking for duplicates after the fact. The first prevents the problem, the second cleans it up."},
	{user: "{intro} {ctxA} Customer success wants a weekly report for the customer once we're live. How much effort is that, roughly, and what should be in it? {ctxB} {bye}",
		reply: "About a day to set up if the dashboard exists: volumes, rejection rate with the top {n} reasons, and anything that took longer than an hour to sync. After that it's automatic."},
	{user: "{intro} {ctxA} I keep hearing the word 'webhook' in our meetings and nodding along. Can you explain whether we'd need one here, and for what? {ctxB} {bye}",
		reply: "A webhook is the other side calling us when something happens, instead of us asking. Here it would replace polling for shipment status; worth asking whether their gateway can send them, since it saves requests."},
	{user: "{intro} {ctxA} How would you test the integration end to end without bothering the warehouse every time? I don't want to burn goodwill with them. {ctxB} {bye}",
		reply: "Record a set of real (anonymised) orders once, replay them against the sandbox in CI, and only involve the warehouse for a final run with physical test shipments."},
	{user: "{intro} {ctxA} What should go into the runbook for {team}, in your opinion? I'd like a first outline before I ask anyone to write it. {ctxB} {bye}",
		reply: "Outline: how to see if orders are flowing, how to resend one order, how to pause the sync, who to contact on each side, and the three most likely errors with their fixes."},
	{user: "{intro} {ctxA} Do you think we need a feature flag for the integration, or is that overkill for one customer? {ctxB} {bye}",
		reply: "A flag per customer is cheap and lets you stop sending orders without a deploy; I'd add it, even for one customer."},
	{user: "{intro} {ctxA} Can you look up how many open tickets {team} has on partner integrations right now? I want to know if they have capacity for another one. {ctxB} {bye}",
		tool:  lookup("search_tickets", obj{"queue": "partners", "status": "open", "team": "{team}"}, "{n} open tickets for {team}. Oldest: PART-3990 (required field missing in export). SLA deadline breached: 1. Agents MUST triage new tickets within 4h."),
		reply: "{team} has {n} open partner tickets, one of them past its response time; they're busy but not drowning."},
	{user: "{intro} {ctxA} I'm curious how long our last partner integration took from kickoff to go-live. Could you check the project history? {ctxB} {bye}",
		tool:  lookup("search_tickets", obj{"queue": "partners", "query": "go-live", "closed": true}, "PART-3120 Nordfrost go-live: kickoff to live {n}1 days. Post-mortem: mapping sign-off required 3 iterations. Decided: template for mapping docs."),
		reply: "The Nordfrost integration took about {n}1 days from kickoff to live; the mapping sign-off needed three rounds, which is where most of the time went."},
	{user: "{intro} {ctxA} How do you think we should version our side of the integration, so that we can change things later without breaking them? {ctxB} {bye}",
		reply: "Version the payloads we send (a schema version field), keep the old version working for one release after a change, and write down in the mapping doc which version each site runs."},
	{user: "{intro} {ctxA} Our CTO asked whether this integration could become a product we sell to other logistics companies. Is that realistic, or is it too custom? {ctxB} {bye}",
		reply: "Parts of it can: the queue, monitoring and retry logic are generic. The mapping to each customer's ERP stays custom; a product would sell the first and charge for the second as a service."},
	{user: "{intro} {ctxA} I need to explain to {team} why an order can take a few minutes to appear on the other side. What's the simplest honest explanation? {ctxB} {bye}",
		reply: "\"Orders are sent in small batches every minute or two so we don't overload their system; if one fails, we retry it automatically, which can add a few minutes.\""},
	{user: "{intro} {ctxA} Should the sync run around the clock, or only during warehouse hours? I can argue both ways. {ctxB} {bye}",
		reply: "Around the clock: orders placed at night should be ready when the morning shift starts, and quiet hours are when retries are cheapest."},
	{user: "{intro} {ctxA} What would you put on a one-slide summary of the project for the steering committee? I get exactly one slide. {ctxB} {bye}",
		reply: "Where we are against the plan (one line), the next milestone and its date, the top two risks with owners, and one ask of the committee. Nothing else fits on a slide that people read."},
	{user: "{intro} {ctxA} Is there a standard format for shipment status codes, or does everyone invent their own? {ctxB} {bye}",
		reply: "Everyone invents their own, sadly; there are EDIFACT and GS1 codes, but most ERPs map them to local ones. Ask for their code list early and keep a translation table on our side."},
	{user: "{intro} {ctxA} If we had to cut one thing from the first version, what would you cut? I'm asking hypothetically, for now. {ctxB} {bye}",
		reply: "The automatic cancellation sync: cancellations are rare enough to handle by email for the first weeks, and it's the part with the most edge cases."},
	{user: "{intro} {ctxA} How should we handle public holidays on their side? Norway, the Netherlands and Germany don't share many. {ctxB} {bye}",
		reply: "Keep a holiday calendar per site in the config and don't alert on low volume on those days; the sync itself can keep running."},
	{user: "{intro} {ctxA} Could you remind me what a dead-letter queue is? I used the term in a meeting and then realised I'm not sure. {ctxB} {bye}",
		reply: "It's where messages go when they fail too many times: set aside, with their error, so that they don't block the rest and someone can look at them later."},
}

var integrationAcks = []exchange{
	{user: "Thanks, that's helpful.", reply: "Glad it helps."},
	{user: "Perfect, forwarding this to the team.", reply: "👍"},
	{user: "Makes sense. Let me think about it.", reply: "Sure, take your time."},
	{user: "Ha, fair enough.", reply: "🙂"},
	{user: "Got it, thank you!", reply: "You're welcome."},
	{user: "Okay, that's clearer now.", reply: "Good."},
	{user: "Noted, thanks.", reply: "Anytime."},
	{user: "Brilliant.", reply: "🙂"},
	{user: "Right, okay.", reply: "👍"},
	{user: "I'll take that to standup.", reply: "Sounds good."},
	{user: "Huh, I didn't know that.", reply: "It's not obvious, to be fair."},
	{user: "Okay, back later.", reply: "Talk later."},
}
