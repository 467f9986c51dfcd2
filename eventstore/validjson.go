package eventstore

// validJSON reports whether data is one JSON value, as encoding/json's
// Valid does, byte for byte the same answer (FuzzValidJSON holds it to
// that): every append's data is checked, and Valid's scanner, a function
// call per byte, was a few percent of a busy gateway's CPU. Like Valid it
// accepts any byte of 0x80 and above in a string (no UTF-8 check) and at
// most maxNesting arrays and objects inside one another.
func validJSON(data []byte) bool {
	var stack []byte // '{' or '[' for each open container
	var small [32]byte
	stack = small[:0]
	i := skipSpace(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if len(stack) == maxNesting {
				return false
			}
			stack = append(stack, c)
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == c+2 { // '}' or ']'
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = objectKey(data, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = stringEnd(data, i); i < 0 {
				return false
			}
		case c == '-' || '0' <= c && c <= '9':
			if i = numberEnd(data, i); i < 0 {
				return false
			}
		case c == 't':
			if i = literalEnd(data, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = literalEnd(data, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = literalEnd(data, i, "null"); i < 0 {
				return false
			}
		default:
			return false
		}
		// A value ended at i: close containers, or go on to the next value.
		for {
			i = skipSpace(data, i)
			if len(stack) == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			open := stack[len(stack)-1]
			if data[i] == open+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if data[i] != ',' {
				return false
			}
			i = skipSpace(data, i+1)
			if open == '{' {
				if i = objectKey(data, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// maxNesting is encoding/json's limit on nested arrays and objects.
const maxNesting = 10000

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// objectKey reads a key and its colon at i: the index of the value after
// them (spaces skipped), or -1.
func objectKey(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = stringEnd(data, i); i < 0 {
		return -1
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipSpace(data, i+1)
}

// stringEnd is the index after the string that opens at i, or -1.
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(data) {
				return -1
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return -1
				}
				for _, h := range data[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// numberEnd is the index after the number that starts at i, or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(data []byte, i int) int {
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return -1
	case data[i] == '0':
		i++
	case '1' <= data[i] && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

// literalEnd is the index after lit at i, or -1.
func literalEnd(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}
