package main

// script is a long conversation written for evaluation: scripted turns at
// fixed places (the facts, their corrections and the requests that refer
// back to them), filler exchanges between them, thinking and status
// messages on their own channels, and the fixture's marks.
type script struct {
	name, description string
	userID, convID    string
	form              form
	seed              uint64
	// system is the system prompt, "" for none.
	system string
	// slots are the values filler exchanges draw their {key}s from.
	slots  map[string][]string
	filler []exchange
	// acks are short exchanges ("ok", "thanks") that take the place of
	// about a third of the filler turns, so that the substantive filler
	// repeats less, as in a real chat.
	acks                      []exchange
	closers, thinking, status []string
	// turns is the number of user turns before the last request; turn t
	// plays at[t] when set, a filler exchange otherwise.
	turns int
	at    map[int]step
	// distinct, when set, never repeats a filler or acknowledgement user
	// message verbatim: a drawn filler whose text was already said is
	// drawn again, and an acknowledgement already said gives way to a
	// filler exchange, as a real user rarely says the same sentence twice.
	distinct bool
	// last is the final user request.
	last      string
	required  []fact
	forbidden []marker
	probes    []probe
}

// step adds messages to a conversation.
type step func(b *builder)

// build plays the script.
func (s *script) build(prefix string) *fixture {
	b := newBuilder(s.form, prefix, s.seed)
	orEmpty := func(xs []string) []string {
		if len(xs) == 0 {
			return []string{""}
		}
		return xs
	}
	c := &chat{
		b:        b,
		slots:    s.slots,
		filler:   newDeck(b, s.filler),
		closers:  newDeck(b, orEmpty(s.closers)),
		thinking: newDeck(b, orEmpty(s.thinking)),
		status:   newDeck(b, orEmpty(s.status)),
	}
	if s.system != "" {
		b.system(s.system)
	}
	var acks *deck[exchange]
	if len(s.acks) > 0 {
		acks = newDeck(b, s.acks)
	}
	said := map[string]bool{}
	for t := 0; t < s.turns; t++ {
		if st, ok := s.at[t]; ok {
			st(b)
			continue
		}
		if s.distinct {
			c.playDistinct(acks, said)
			continue
		}
		if acks != nil && b.rnd.IntN(100) < 35 {
			ex := acks.next()
			b.user(ex.user)
			b.assistant(ex.reply)
			continue
		}
		c.run(1, nil)
	}
	b.user(s.last)
	return &fixture{
		name:        s.name,
		description: s.description,
		userID:      s.userID,
		convID:      s.convID,
		b:           b,
		required:    s.required,
		forbidden:   s.forbidden,
		probes:      s.probes,
	}
}

// seq plays steps in order.
func seq(steps ...step) step {
	return func(b *builder) {
		for _, st := range steps {
			st(b)
		}
	}
}

// say is a user message and the assistant's answer.
func say(user, reply string) step {
	return func(b *builder) {
		b.user(user)
		b.assistant(reply)
	}
}

func userSays(text string) step { return func(b *builder) { b.user(text) } }

func replies(text string) step { return func(b *builder) { b.assistant(text) } }

// thinks adds a message on the thinking channel.
func thinks(text string) step { return func(b *builder) { b.channel("thinking", text) } }

// reports adds a message on the status channel.
func reports(text string) step { return func(b *builder) { b.channel("status", text) } }

// usesTools adds an assistant message with tool calls and their results.
func usesTools(prose string, calls ...call) step {
	return func(b *builder) { b.tools(prose, calls...) }
}

// toolTurn is a user request the assistant answers after calling tools.
func toolTurn(user, reply string, calls ...call) step {
	return seq(userSays(user), usesTools("", calls...), replies(reply))
}

// lookup is a filler exchange's tool: a call named name whose arguments
// and output are filled with the exchange's values.
func lookup(name string, args obj, output string) func(b *builder, vals map[string]string) call {
	return func(_ *builder, vals map[string]string) call {
		filled := make(obj, len(args))
		for k, v := range args {
			if s, ok := v.(string); ok {
				v = fill(s, vals)
			}
			filled[k] = v
		}
		return call{name: name, args: filled, output: fill(output, vals)}
	}
}

// followUps plays late exchanges, given as user request and reply pairs.
func followUps(b *builder, pairs ...string) {
	if len(pairs)%2 != 0 {
		panic("followUps: a request without a reply")
	}
	for i := 0; i < len(pairs); i += 2 {
		b.user(pairs[i])
		b.assistant(pairs[i+1])
	}
}

// playDistinct plays one filler turn whose user message was not said
// before: an acknowledgement about a third of the time while new ones are
// left, a filler exchange otherwise, its values drawn again (a bounded number
// of times) until its text is new.
func (c *chat) playDistinct(acks *deck[exchange], said map[string]bool) {
	if acks != nil && c.b.rnd.IntN(100) < 35 {
		if ex := acks.next(); !said[ex.user] {
			said[ex.user] = true
			c.b.user(ex.user)
			c.b.assistant(ex.reply)
			return
		}
	}
	for try := 0; ; try++ {
		ex := c.filler.next()
		vals := c.b.choose(c.slots)
		text := fill(ex.user, vals)
		if said[text] && try < 1000 {
			continue
		}
		if said[text] {
			panic("fixturegen: the filler has too few distinct user messages for the script")
		}
		said[text] = true
		c.play(ex, vals)
		return
	}
}
