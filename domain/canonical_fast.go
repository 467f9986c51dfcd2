package domain

import (
	"bytes"
	"slices"
	"unicode/utf8"
)

// canonicalFast is CanonicalJSON for the documents Baton itself writes:
// its strings hold no escape, no control character and no U+2028 or
// U+2029, so encoding/json writes them back byte for byte, and only the
// keys' order and the whitespace change. It walks the bytes once, with no
// decode into maps. ok is false for anything else (and for anything that
// is not valid JSON or has a key twice): CanonicalJSON then takes the
// general path, whose output this one matches exactly (FuzzCanonicalFast).
func canonicalFast(data []byte) (out []byte, ok bool) {
	p := fastParser{data: data}
	p.space()
	out, ok = p.value(make([]byte, 0, len(data)), 0)
	if !ok {
		return nil, false
	}
	p.space()
	return out, p.i == len(p.data)
}

type fastParser struct {
	data []byte
	i    int
}

// fastDepth: deeper documents take the general path.
const fastDepth = 64

func (p *fastParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) value(out []byte, depth int) ([]byte, bool) {
	if p.i >= len(p.data) || depth > fastDepth {
		return nil, false
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(out, depth)
	case c == '[':
		return p.array(out, depth)
	case c == '"':
		s, ok := p.str()
		return append(out, s...), ok
	case c == 't':
		return p.literal(out, "true")
	case c == 'f':
		return p.literal(out, "false")
	case c == 'n':
		return p.literal(out, "null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number(out)
	}
	return nil, false
}

func (p *fastParser) literal(out []byte, lit string) ([]byte, bool) {
	if !bytes.HasPrefix(p.data[p.i:], []byte(lit)) {
		return nil, false
	}
	p.i += len(lit)
	return append(out, lit...), true
}

// number copies a JSON number as it is, as encoding/json does with a
// json.Number.
func (p *fastParser) number(out []byte) ([]byte, bool) {
	start := p.i
	if p.data[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.data) && p.data[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, false
	}
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		p.i++
		if p.i < len(p.data) && (p.data[p.i] == '+' || p.data[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return append(out, p.data[start:p.i]...), true
}

// str returns a string token, quotes included, when encoding/json would
// write its value back as the same bytes.
func (p *fastParser) str() ([]byte, bool) {
	start := p.i
	p.i++
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			return p.data[start:p.i], true
		case c == '\\' || c < 0x20:
			return nil, false
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRune(p.data[p.i:])
			if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				return nil, false
			}
			p.i += size
		}
	}
	return nil, false
}

func (p *fastParser) array(out []byte, depth int) ([]byte, bool) {
	p.i++
	out = append(out, '[')
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return append(out, ']'), true
	}
	for {
		var ok bool
		p.space()
		if out, ok = p.value(out, depth+1); !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.data) {
			return nil, false
		}
		switch p.data[p.i] {
		case ',':
			p.i++
			out = append(out, ',')
		case ']':
			p.i++
			return append(out, ']'), true
		default:
			return nil, false
		}
	}
}

// fastMember is an object's member as parsed: its key (quoted; without
// escapes, its bytes between the quotes are its string) and where its
// canonical value was written.
type fastMember struct {
	key        []byte
	start, end int
}

func (p *fastParser) object(out []byte, depth int) ([]byte, bool) {
	p.i++
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return append(out, '{', '}'), true
	}
	// The values are written after out's end as they are parsed, then
	// copied behind their keys in the keys' order.
	base := len(out)
	var small [16]fastMember
	members := small[:0]
	for {
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return nil, false
		}
		key, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		start := len(out)
		if out, ok = p.value(out, depth+1); !ok {
			return nil, false
		}
		members = append(members, fastMember{key, start, len(out)})
		p.space()
		if p.i >= len(p.data) {
			return nil, false
		}
		if p.data[p.i] == '}' {
			p.i++
			break
		}
		if p.data[p.i] != ',' {
			return nil, false
		}
		p.i++
	}
	// encoding/json writes a map's keys in the order of their strings.
	keyOf := func(m fastMember) []byte { return m.key[1 : len(m.key)-1] }
	slices.SortFunc(members, func(a, b fastMember) int { return bytes.Compare(keyOf(a), keyOf(b)) })
	values := slices.Clone(out[base:])
	out = append(out[:base], '{')
	for i, m := range members {
		if i > 0 {
			if bytes.Equal(keyOf(members[i-1]), keyOf(m)) {
				return nil, false // a key twice: the general path names it
			}
			out = append(out, ',')
		}
		out = append(append(append(out, m.key...), ':'), values[m.start-base:m.end-base]...)
	}
	return append(out, '}'), true
}
