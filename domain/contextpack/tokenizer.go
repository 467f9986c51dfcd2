package contextpack

import (
	"fmt"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Encodings Baton counts tokens with, the default first. o200k_base is the
// encoding of OpenAI's current models (GPT-4o, GPT-4.1, o-series);
// cl100k_base that of GPT-4 and GPT-3.5. For other providers' models the
// count is an estimate.
var Encodings = []string{"o200k_base", "cl100k_base"}

// DefaultEncoding is the encoding used when a request names none.
const DefaultEncoding = "o200k_base"

// Tokenizer turns text into tokens and back. Build needs nothing more, so
// tests may pass a fake.
type Tokenizer interface {
	Encode(text string) []int
	Decode(tokens []int) string
}

var (
	loaderOnce sync.Once
	encMu      sync.Mutex
	encCache   = map[string]*tiktoken.Tiktoken{}
)

// NewTokenizer returns the BPE tokenizer of a supported encoding. Its ranks
// are compiled into the binary (tiktoken-go-loader's offline loader,
// installed before the first encoding is built, as tiktoken-go's default
// downloads them): nothing is fetched, ever. An encoding is built once per
// process and shared; it is safe for concurrent use.
func NewTokenizer(encoding string) (Tokenizer, error) {
	if !slices.Contains(Encodings, encoding) {
		return nil, fmt.Errorf("contextpack: unsupported encoding %q", encoding)
	}
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	encMu.Lock()
	defer encMu.Unlock()
	if t, ok := encCache[encoding]; ok {
		return bpe{t}, nil
	}
	t, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("contextpack: load %s: %w", encoding, err)
	}
	encCache[encoding] = t
	return bpe{t}, nil
}

// MaxRun bounds the bytes of a run without whitespace that the tokenizer
// encodes in one go: tiktoken-go's merge is quadratic in a run's length.
// Longer runs are encoded MaxRun bytes at a time, cut at a character
// boundary (docs/api.md, "Context packets": what that does to the count).
const MaxRun = 256

// bpe counts special-token text such as "<|endoftext|>" as ordinary text:
// the content is the caller's, never a control sequence.
type bpe struct{ t *tiktoken.Tiktoken }

func (b bpe) Decode(tokens []int) string { return b.t.Decode(tokens) }

func (b bpe) Encode(text string) []int {
	var out []int
	for _, seg := range segments(text) {
		out = append(out, b.t.EncodeOrdinary(seg)...)
	}
	return out
}

// segments cuts text inside every run of more than MaxRun bytes without
// whitespace, so that no segment holds such a run; elsewhere it is whole.
func segments(text string) []string {
	var segs []string
	start, run := 0, 0 // run: bytes since the last whitespace
	for i, r := range text {
		if unicode.IsSpace(r) {
			run = 0
			continue
		}
		n := utf8.RuneLen(r)
		if n < 0 {
			n = 1 // invalid UTF-8 reads as one byte
		}
		if run+n > MaxRun {
			segs = append(segs, text[start:i])
			start, run = i, 0
		}
		run += n
	}
	return append(segs, text[start:])
}
