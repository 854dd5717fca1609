package main

import "fmt"

func offsitePlan() *fixture {
	b := newBuilder(stored, "off", 2)
	c := &chat{
		b: b,
		slots: map[string][]string{
			"person": {"Kemal", "Lea", "Dana", "Piotr", "Ines", "Hannah", "Bruno", "Yusuf"},
			"n":      {"4", "6", "8", "12", "15", "20", "25"},
			"place":  {"Alfama", "Belém", "Cascais", "Sintra", "LX Factory", "Príncipe Real"},
			"team":   {"platform", "payments", "mobile", "data", "design", "support"},
		},
		filler: newDeck(b, offsiteFiller),
		closers: newDeck(b, []string{"", "", "", "", "", "", "",
			" I'll add it to the plan.",
			" Let me know if you need to change anything.",
			" Shall I draft the message?",
			" Happy to look into alternatives too.",
		}),
		thinking: newDeck(b, []string{
			"User seems cost-sensitive; lead with prices.",
			"Cross-check against the dates before replying.",
			"Keep the answer short; this is a logistics detail.",
		}),
		status: newDeck(b, []string{"Searching flights…", "Checking venue availability…"}),
	}
	b.system("You help plan company events. Vendor contract template: TEMPLATE-7781-CONFIDENTIAL.")
	script := map[int]func(){
		0: func() {
			b.user("We're organising the engineering offsite for 60 people this spring. The budget is at most €48,000 all in, travel included.")
			b.assistant("Great — 60 people and €48,000 including travel works out to €800 per person. Do you have dates or a region in mind?")
		},
		1: func() {
			b.user("Dates are fixed: Tuesday 12 to Thursday 14 May. People can't be away over a weekend, lots of them have kids.")
			b.assistant("Tuesday 12 to Thursday 14 May, weekdays only. That also helps with hotel prices.")
		},
		2: func() {
			b.user("Nobody should fly more than three hours each way; most people are in Berlin and Amsterdam, a few in Warsaw.")
			b.assistant("Within three hours of Berlin, Amsterdam and Warsaw: Lisbon is borderline from Warsaw, but Porto, Barcelona, Mallorca, Split and Lisbon all work from Berlin and Amsterdam.")
		},
		3: func() {
			b.user("The venue must be fully wheelchair accessible — two colleagues use wheelchairs, so that includes rooms, the hall and transfers.")
			b.assistant("Understood. I'll only shortlist venues with step-free access to rooms and the hall, and ask for accessible transfers in every quote.")
		},
		4: func() {
			b.user("Let's go with Lisbon; Porto's flights from Warsaw are worse.")
			b.tools("", call{name: "search_venues", args: obj{"city": "Lisbon", "rooms": 60, "accessible": true, "from": "2025-05-12", "to": "2025-05-14"},
				output:   "3 venues match: Hotel Miradouro (62 rooms, hall 120 seats, €31,400), Casa do Rio (58 rooms), Estrela Congress (90 rooms, €39,900). ref VQ-55120",
				artifact: obj{"ref": "VQ-55120", "venues": []any{obj{"name": "Hotel Miradouro", "rooms": 62, "price_eur": 31400}, obj{"name": "Casa do Rio", "rooms": 58}, obj{"name": "Estrela Congress", "rooms": 90, "price_eur": 39900}}}})
			b.assistant("Lisbon it is. Three venues have the space and step-free access; Hotel Miradouro has 62 rooms and a 120-seat hall on the ground floor, and its offer is the cheapest.")
		},
		5: func() {
			b.user("Hotel Miradouro's offer is the one. Please ask them to hold the rooms.")
			b.assistant("I'll ask Hotel Miradouro to hold 62 rooms for 12–14 May and send the contract for review.")
		},
		6: func() {
			b.user("Food: every meal needs a vegan option and clear allergen labels.")
			b.assistant("Noted for every meal, including the coffee breaks.")
		},
		7: func() {
			b.user("Kemal owns the agenda; Lea owns logistics.")
			b.assistant("Got it — agenda questions go to Kemal, everything logistical to Lea.")
		},
		150: func() {
			b.user("Reminder: the €48,000 cap includes flights, so keep an eye on fares.")
			b.assistant("Yes, flights are in the same pot. Current estimate is €43,900 with flights, so there's some room left.")
		},
	}
	c.run(300, script)
	// Late follow-ups, appended so that the 300 turns above stay as they
	// were.
	followUps(b,
		"The transfer company asks what kind of coaches to send. Anything special?",
		"Yes: coaches with a wheelchair lift and space for two wheelchairs, for the airport transfers and the dinner outings.",
		"Someone suggested a Saturday morning surf lesson as an add-on. OK?",
		"I'd skip it: the offsite ends on Thursday, and a Saturday would keep people away over the weekend.",
		"If Lisbon hotels get expensive, could we switch to Split? The Warsaw folks would fly via Vienna.",
		"With a connection via Vienna the Warsaw group would travel well over three hours each way, so Split doesn't fit.",
		"Who do I send the session proposals to?",
		"To Kemal; he owns the agenda.",
	)
	b.user("Send me the final budget breakdown, please.")
	return &fixture{
		name:        "long-offsite-plan",
		description: "A 300-turn planning chat in LangChain's stored form (with flat thinking and status messages) for a company offsite: budget, dates, travel, accessibility and venue are settled in the first eight turns and must survive.",
		userID:      "u-people-ops",
		convID:      "offsite-2025",
		b:           b,
		required: []fact{
			{"at most €48,000 all in", "the budget", "constraints"},
			{"Tuesday 12 to Thursday 14 May", "fixed dates", "constraints"},
			{"Nobody should fly more than three hours each way", "travel limit", "constraints"},
			{"must be fully wheelchair accessible", "accessibility", "constraints"},
			{"Let's go with Lisbon", "destination", "decisions"},
			{"Hotel Miradouro's offer is the one", "venue", "decisions"},
			{"every meal needs a vegan option", "catering", "constraints"},
			{"Kemal owns the agenda", "ownership", "decisions"},
		},
		forbidden: []marker{
			{Text: "TEMPLATE-7781-CONFIDENTIAL", Why: "system prompt"},
			{Text: "ref VQ-55120", Why: "tool output"},
			{Text: "fare-quote ", Why: "tool output"},
			{Text: "User seems cost-sensitive", Why: "thinking"},
			{Text: "Searching flights", Why: "status"},
		},
		probes: []probe{
			{Request: "what kind of coaches to send", Facts: []string{"two colleagues use wheelchairs"}, Why: "accessible transfers"},
			{Request: "Saturday morning surf lesson", Facts: []string{"People can't be away over a weekend"}, Why: "weekdays only"},
			{Request: "could we switch to Split?", Facts: []string{"Nobody should fly more than three hours each way"}, Why: "the travel limit"},
			{Request: "Who do I send the session proposals to?", Facts: []string{"Kemal owns the agenda"}, Why: "the agenda owner"},
			{Request: "Send me the final budget breakdown", Facts: []string{"at most €48,000 all in"}, Why: "the cap"},
		},
	}
}

func flightTool(b *builder, vals map[string]string) call {
	fare := 90 + b.rnd.IntN(160)
	return call{
		name:     "search_flights",
		args:     obj{"from": []string{"BER", "AMS", "WAW"}, "to": "LIS", "date": "2025-05-12"},
		output:   fmt.Sprintf("fare-quote BER-LIS from €%d, AMS-LIS from €%d, WAW-LIS from €%d (1 stop)", fare, fare+20, fare+70),
		artifact: obj{"quotes": []any{obj{"route": "BER-LIS", "eur": fare}, obj{"route": "AMS-LIS", "eur": fare + 20}}},
	}
}

var offsiteFiller = []exchange{
	{user: "What's a good opening session for day one?", reply: "A short welcome from the CTO, then a 'year in review' with demos from each team. Keep it under 90 minutes; people will have been travelling."},
	{user: "{person} suggested a boat trip on the Tagus. Thoughts?", reply: "It's a nice idea, but most boats aren't step-free. There's one operator with an accessible catamaran for up to 70 people; I'd ask them for a quote before promising anything."},
	{user: "How do we get people from the airport to the hotel?", reply: "Two coaches with lifts, timed to the main arrival waves, plus taxis for anyone arriving off-schedule. The airport is about 25 minutes from the hotel."},
	{user: "Check flight prices for the {team} team.", tool: flightTool, reply: "Fares are reasonable right now if we book in the next two weeks; prices usually climb a lot in April."},
	{user: "Can we do a dinner in {place} on the second night?", reply: "Yes. There are a few restaurants in {place} that can seat 60 with step-free access. I'd book a set menu to keep the cost predictable, around €55 per head with drinks."},
	{user: "{person} wants a hackathon slot.", reply: "We could give the whole afternoon of day two to it: pitches at 13:30, building until 17:30, demos before dinner. It needs good Wi-Fi, so I'll ask the hotel for their bandwidth."},
	{user: "What's the weather usually like in mid-May?", reply: "Mild: around 22°C during the day and 15°C at night, with a small chance of rain. Outdoor sessions are possible, with a backup room."},
	{user: "Do we need travel insurance for everyone?", reply: "The company travel policy already covers business trips in the EU, so nothing extra is needed; I'd still remind people to carry their EHIC card."},
	{user: "How many rooms should be single occupancy?", reply: "With 62 rooms for 60 people, everyone can have their own room and two remain for speakers or late changes."},
	{user: "{person} asked about bringing a partner.", reply: "Partners could join for the dinners at their own cost. Extra nights before or after the offsite would be on the employee, at the group rate if the hotel agrees."},
	{user: "What AV equipment does the hall have?", reply: "Two projectors, a PA with four wireless mics and a stage without steps. I'd add a streaming kit for the remote colleagues, around €600 for the three days."},
	{user: "How do we include the {n} people who can't travel?", reply: "Stream the plenary sessions, and give remote people their own breakout with a facilitator. Sending them a small care package the same week helps them feel included."},
	{user: "Draft the save-the-date message.", reply: "\"Save the date: engineering offsite in Lisbon, Tuesday 12 to Thursday 14 May. Travel and hotel are booked centrally; watch for a form about dietary needs and accessibility next week.\""},
	{user: "What's the cancellation policy on the hotel?", reply: "Free cancellation of up to 10% of the rooms until 30 days before arrival; after that we pay 50% for released rooms."},
	{user: "{person} wants to know if there's a gym.", reply: "There is a small gym and a pool on the roof, both included in the room rate."},
	{user: "Let's add a workshop on incident response.", reply: "Good topic. A tabletop exercise works well with 60 people split into six groups, each with a scenario and an observer. Two hours is enough."},
	{user: "What about swag?", reply: "Something useful and light to carry: a tote bag or a water bottle. Around €12 per person, ordered at least four weeks ahead."},
	{user: "How do we collect dietary requirements?", reply: "A short form with the allergens the hotel lists, plus a free-text field. I'll send the aggregated list to the kitchen two weeks before."},
	{user: "Is there a quiet room for people who need a break?", reply: "The hotel has a small library on the first floor we can book for the three days as a quiet room."},
	{user: "What time should day two start?", reply: "09:30, after a relaxed breakfast. The first evening runs late, and an early start rarely works."},
	{user: "Can we get a local speaker?", reply: "There's a Lisbon-based engineering leader who talks about building teams across time zones; her fee is around €1,500. I can reach out if you like."},
	{user: "{person} is asking about visas for the {team} team.", reply: "Everyone on the {team} team holds an EU passport or residence permit, so no visas are needed for Portugal."},
	{user: "How long are the transfers to {place}?", reply: "About {n} to 35 minutes by coach, depending on traffic. I'd leave the hotel 45 minutes before the booking."},
	{user: "Where are we on spending?", reply: "Hotel €31,400, flights around €9,800 so far, dinners €6,600 if both are set menus. Activities and AV aren't booked yet."},
	{user: "Do people get a per diem?", reply: "Meals are covered, so a per diem isn't needed. Taxis outside the programme can be expensed as usual."},
	{user: "What's the plan if a flight is cancelled?", reply: "Lea's phone becomes the travel hotline for the three days, and the travel agency rebooks. The hotel holds rooms for late arrivals as long as we tell them."},
	{user: "{person} wants a survey after the offsite.", reply: "I'll prepare five questions: overall rating, best session, worst session, logistics, and one free-text suggestion. Send it the Monday after."},
	{user: "Should we do name badges?", reply: "Yes, with first name, team and pronouns if people want them. Printing 70 badges costs very little."},
	{user: "What if it rains on the outdoor lunch?", reply: "The hotel keeps the terrace restaurant free as a backup for that day at no extra charge."},
	{user: "Can we have a session on the roadmap?", reply: "Kemal can run it on day two morning: 45 minutes of roadmap, 30 minutes of questions."},
	{user: "Thanks!", reply: "Any time."},
	{user: "How many people have registered so far?", reply: "{n} people haven't answered the form yet; everyone else is in. I'll send a reminder."},
	{user: "Check flights again for the late registrations.", tool: flightTool, reply: "Still within range for the late registrations; booking this week keeps them in line with the others."},
	{user: "{person} suggested a sunset walk in {place}.", reply: "Possible, but the old town is hilly with lots of cobblestones. The riverside promenade is flat and has the same views, so I'd pick that."},
}

func productLaunch() *fixture {
	b := newBuilder(constructor, "launch", 3)
	c := &chat{
		b: b,
		slots: map[string][]string{
			"person":  {"Marta", "Olu", "Jin", "Felix", "Sara", "Noah"},
			"channel": {"the newsletter", "LinkedIn", "the blog", "Mastodon", "the App Store page", "Product Hunt"},
			"n":       {"2", "3", "5", "8", "12"},
			"lang":    {"German", "French", "Spanish", "Japanese", "Portuguese"},
		},
		filler: newDeck(b, launchFiller),
		closers: newDeck(b, []string{"", "", "", "", "",
			" Want me to draft it?",
			" I'll add it to the launch checklist.",
			" Let me know what you think.",
		}),
		thinking: newDeck(b, []string{"Check which assets are already approved.", "Remember the embargo when suggesting timing."}),
		status:   newDeck(b, []string{"Generating copy variants…"}),
	}
	script := map[int]func(){
		0: func() {
			b.user("We're launching Fieldnote 3.0. Launch date is 3 March and it cannot move — the conference keynote is that day.")
			b.assistant("3 March, tied to the keynote. That gives us about seven weeks. Shall we start with the launch checklist?")
		},
		1: func() {
			b.user("Yes. First, legal says we can't name any competitor in ads or on the landing page.")
			b.assistant("Understood, no competitor names anywhere in paid or owned channels. Comparisons will talk about what Fieldnote does, not about others.")
		},
		2: func() {
			b.user("Pricing: €7.99 a month, and €69 a year. Approved by the board yesterday.")
			b.assistant("Great, that's settled then. I'll use those numbers on the pricing page draft.")
		},
		3: func() {
			b.user("The free tier stays, capped at 3 notebooks.")
			b.assistant("Free tier with 3 notebooks. I'll make the upgrade prompt appear when someone creates the fourth.")
		},
		4: func() {
			b.user("Design: the teal colour scheme from the second round. Final.")
			b.assistant("Teal from round two it is. I'll ask design for the exported assets.")
		},
		5: func() {
			b.user("The press embargo lifts 09:00 PT on launch day.")
			b.assistant("09:00 PT, which is 18:00 in Berlin. All posts are scheduled after that.")
		},
		6: func() {
			b.user("TODO for me: book the podcast slots with DevTalk and Shipping Weekly.")
			b.assistant("Added to your list. Both podcasts record about two weeks ahead, so mid-February at the latest.")
		},
		40: func() {
			b.user("Change of plan: the annual plan is €59 a year, not €69 — the board wants a stronger yearly discount.")
			b.assistant("Updated: €7.99 monthly, €59 yearly. I'll fix the pricing page and the App Store listing.")
		},
	}
	c.run(100, script)
	// Late follow-ups, appended so that the 100 turns above stay as they
	// were.
	followUps(b,
		"Can we say on the landing page that we're faster than Notion?",
		"Better not: naming a competitor on the landing page is off the table. Say what Fieldnote does, e.g. \"opens a 500-page notebook in under a second\".",
		"What should the yearly price say on the App Store listing?",
		"€59 a year, the revised price; the monthly one stays €7.99.",
		"When can the blog post go live on the day?",
		"Not before 09:00 PT, which is 18:00 in Berlin.",
		"What colour should the new banner use?",
		"The teal scheme from round two, like the rest of the launch assets.",
		"What's still on my plate before launch?",
		"The podcast bookings with DevTalk and Shipping Weekly; both record about two weeks ahead.",
	)
	b.user("Write the launch-day timeline, hour by hour.")
	return &fixture{
		name:        "long-product-launch",
		description: "A 100-turn launch-planning chat in LangChain's constructor form: fixed date, legal limits, pricing (revised at turn 40), free tier, design and an open task.",
		userID:      "u-marketing",
		convID:      "fieldnote-3-launch",
		b:           b,
		required: []fact{
			{"Launch date is 3 March and it cannot move", "fixed date", "constraints"},
			{"we can't name any competitor in ads", "legal", "constraints"},
			{"€7.99 a month", "monthly price", "decisions"},
			{"the annual plan is €59 a year, not €69", "revised yearly price", "decisions"},
			{"capped at 3 notebooks", "free tier", "decisions"},
			{"the teal colour scheme from the second round", "design", "decisions"},
			{"The press embargo lifts 09:00 PT on launch day", "embargo", "constraints"},
			{"book the podcast slots with DevTalk and Shipping Weekly", "open task", "open_work"},
		},
		forbidden: []marker{
			{Text: "Check which assets are already approved", Why: "thinking"},
			{Text: "Generating copy variants", Why: "status"},
			{Text: "tone-score", Why: "tool output"},
		},
		probes: []probe{
			{Request: "faster than Notion", Facts: []string{"we can't name any competitor in ads"}, Why: "the legal limit"},
			{Request: "What should the yearly price say", Facts: []string{"the annual plan is €59 a year, not €69"}, Why: "the revised price, not the first"},
			{Request: "When can the blog post go live on the day?", Facts: []string{"The press embargo lifts 09:00 PT on launch day"}, Why: "the embargo"},
			{Request: "What colour should the new banner use?", Facts: []string{"the teal colour scheme from the second round"}, Why: "the design decision"},
			{Request: "What's still on my plate before launch?", Facts: []string{"book the podcast slots with DevTalk and Shipping Weekly"}, Why: "the open task"},
			{Request: "Write the launch-day timeline", Facts: []string{"Launch date is 3 March", "The press embargo lifts 09:00 PT"}, Why: "date and embargo"},
		},
	}
}

func copyTool(b *builder, vals map[string]string) call {
	return call{
		name:   "draft_copy",
		args:   obj{"channel": vals["channel"], "variants": 3},
		output: fmt.Sprintf("3 variants for %s (tone-score %d/100): A) 'Notes that keep up with you.' B) 'Fieldnote 3: think on paper, find it anywhere.' C) 'Your notebook, finally organised.'", vals["channel"], 60+b.rnd.IntN(40)),
	}
}

var launchFiller = []exchange{
	{user: "Draft a post for {channel}.", tool: copyTool, reply: "I'd go with B for {channel}: it says what's new without overselling. I can adapt the length if needed."},
	{user: "What should go in the release notes?", reply: "Lead with offline sync and the new search, then the smaller things: templates, dark mode fixes, faster start-up. Keep each point to one sentence."},
	{user: "{person} asked when the App Store screenshots are due.", reply: "Apple's review takes one to three days, so screenshots and the listing should be final by 24 February to leave room for a rejection."},
	{user: "Do we localise the landing page into {lang}?", reply: "{lang} is about {n}% of our traffic. I'd translate the landing page and the App Store listing, and leave the docs in English for now."},
	{user: "How do we handle support load on launch day?", reply: "Two extra people on the support rota for launch week, a pinned FAQ, and a status page link in the app's help menu."},
	{user: "What metrics do we watch during launch week?", reply: "Sign-ups per hour, upgrade conversion from the free tier, crash-free sessions, and support tickets tagged 3.0. A simple dashboard is enough."},
	{user: "{person} wants a teaser video.", reply: "A 30-second screen recording with captions works best on social. Design already has the teal assets, so it's mostly editing."},
	{user: "Should we do a beta waitlist?", reply: "We have {n}00 beta users already. I'd invite them to a private preview a week before launch and ask for App Store reviews on the day."},
	{user: "What's the subject line for the launch email?", reply: "'Fieldnote 3 is here: your notes, offline and searchable.' Short, and it names the two features people asked for most."},
	{user: "{person} found a crash in the sync code.", reply: "If it's reproducible, it's a launch blocker. I'd ask {person} to file it with steps and tag it for the 3.0 milestone."},
	{user: "How many press contacts do we have?", reply: "About {n}0 journalists and newsletter writers who covered 2.0. A personal note to the top ten works better than a mass mail."},
	{user: "What's the plan for existing subscribers?", reply: "They keep their current price for 12 months, then move to the new one with a 30-day notice. That's what we promised in 2.0."},
	{user: "Can we run ads on {channel}?", reply: "We can, but organic posts on {channel} have done better for us. I'd keep paid budget for search ads in the first two weeks."},
	{user: "Thanks, looks good.", reply: "Great."},
	{user: "Let's write the FAQ.", reply: "Top questions from the beta: Does offline sync work on Android? Can I export to Markdown? What happens to my notebooks if I downgrade? I'll draft answers for each."},
	{user: "{person} asks whether the web app ships on the same day.", reply: "The web app is ready too, so yes. It just needs the new pricing page and the feature flags flipped."},
	{user: "Do we need a press kit?", reply: "Yes: logo files, six screenshots, a one-page fact sheet and founder photos, zipped and linked from the press page."},
	{user: "What about partnerships?", reply: "Two note-taking YouTubers offered reviews. I'd give them early access under the same embargo."},
	{user: "Give me a draft tweet thread.", tool: copyTool, reply: "Here's a five-post thread: the headline, offline sync, search, templates, and pricing with the free tier."},
	{user: "When do we freeze the code?", reply: "Code freeze on 20 February gives QA a full week before the store submission. After that, only launch blockers go in."},
	{user: "{person} wants to change the onboarding.", reply: "It's late for onboarding changes. If it's copy only, fine; if it touches flows, I'd schedule it for 3.1."},
	{user: "How should we announce it internally?", reply: "A short all-hands demo on launch morning, and a Slack post with the links people should share."},
	{user: "What's our rollback plan for the app?", reply: "Phased release on the App Store, starting at 10%. If crash rates jump, we pause the rollout; the web app can roll back within minutes."},
	{user: "Can you check the landing page copy for {lang}?", reply: "The {lang} draft reads well, but the pricing line is still the old one and the CTA button is too long for mobile."},
}
