// Writes test/fixtures/go-outputs.json: what Go's standard library answers for the inputs that
// src/apimachinery/golang/ imitates, so test/unit/golang.test.ts can check every helper against Go itself.
// Run from the repository root (Go 1.19 or later, standard library only):
//
//	go run scripts/go-fixtures/main.go > test/fixtures/go-outputs.json
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Strings travel as JSON texts, decoded by encoding/json as kube decodes request bodies: a lone surrogate
// escape becomes U+FFFD, as it does for Go, while JSON.parse keeps it (the helpers must agree anyway).
var stringTexts = []string{
	`""`, `"a"`, `"A"`, `"ab"`, `"a\u0000"`, `"b"`, `"Z"`, `"~"`, `"\u007f"`, `"é"`, `"e\u0301"`, `"ÿ"`,
	`"\u0100"`, `"\ue000"`, `"\uffff"`, `"\ufffd"`, `"\ud83d\ude00"`, `"\ud800\udc00"`, `"\ud800"`, `"\udfff"`,
	`"a\ud800b"`, `"日本"`, `"<&>"`, `"\u2028\u2029"`, `"\"\\/"`, `"\b\f\n\r\t\u0001\u001f"`, `"\u0085"`, `"\u00a0"`,
	`"\u00ad"`, `"\u200b"`, `"\ufeff"`, `"a\u0007b\u000b"`, `"\ud83d"`, `"x\udc00y"`,
}

var rfc3339Inputs = []string{
	"2025-05-01T10:00:00Z", "2025-05-01T10:00:00.5Z", "2025-05-01T10:00:00.123456789Z",
	"2025-05-01T10:00:00.1234567891Z", "2025-05-01T10:00:00.000000001Z", "2025-05-01T10:00:00.999999999999Z",
	"2025-05-01T10:00:00,5Z", "2025-05-01T10:00:00+02:00", "2025-05-01T10:00:00-07:30",
	"2025-05-01T10:00:00.25+05:45", "2025-05-01T00:30:00+01:00", "2025-05-01T10:00:00+00:00",
	"2025-05-01T10:00:00-00:00", "2025-05-01T10:00:00+23:59", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z",
	"2025-04-31T00:00:00Z", "2025-13-01T00:00:00Z", "2025-00-01T00:00:00Z", "2025-05-00T00:00:00Z",
	"2025-05-01T24:00:00Z", "2025-05-01T23:60:00Z", "2025-05-01T23:59:60Z", "2025-05-01T1:00:00Z",
	"2025-05-01T10:0:00Z", "2025-05-01t10:00:00Z", "2025-05-01T10:00:00z", "2025-05-01 10:00:00Z",
	"2025-05-01T10:00:00", "2025-05-01", "2025-05-01T10:00Z", "2025-05-01T10:00:00.Z", "2025-05-01T10:00:00.5",
	"2025-05-01T10:00:00+0200", "2025-05-01T10:00:00+2:00", "2025-05-01T10:00:00 +02:00",
	"2025-05-01T10:00:00Z ", " 2025-05-01T10:00:00Z", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z",
	"0099-12-31T23:59:59Z", "1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
	"10000-01-01T00:00:00Z", "+2025-05-01T10:00:00Z", "2025-5-01T10:00:00Z", "2025-05-1T10:00:00Z", "",
	"null", "2000-02-29T12:00:00-12:00", "1900-02-29T00:00:00Z", "2025-05-01T10:00:00+24:00",
	"2025-05-01T10:00:00-24:00", "2025-05-01T10:00:00+23:60", "2025-05-01T10:00:00+a1:00", "2025-05-01T10:00:00+01:0a",
	"2025-05-01T10:00:00.5,5Z", "2025-05-01T10:00:00,Z", "2025-05-01T7:05:09.01-03:00", "0000-01-01T00:00:00+01:00",
	"9999-12-31T23:59:59-01:00", "2025-05-01T10:00:00Z\n",
}

// Offsets beyond +24:00 or :60 are left out: Go 1.20 and later refuse them, Go 1.19 (Debian's) takes them.

var durationInputs = []string{
	"0", "+0", "-0", "", "0s", "1s", "30s", "1m30s", "1h", "1.5h", "250ms", "1ns", "1us", "1µs", "1μs",
	".5s", "5.s", "0.5s", "1.s", "-5s", "+5s", "-1.5h", "1h2m3s4ms5us6ns", "1s1s", "1.0000000001s",
	"0.1ns", "1.9ns", "2562047h47m16.854775807s", "2562047h47m16.854775808s", "-2562047h47m16.854775808s",
	"9223372036854775807ns", "9223372036854775808ns", "-9223372036854775808ns", "9223372036854775807.9ns",
	"99999999999999999999s", "1.00000000000000000000000001s", "0.333333333333333333333h", "s", ".s", "-.s", ".",
	"5", "1x", "1S", "1 s", " 1s", "1s ", "1ms5", "1e3s", "+-1s", "--1s", "1h-1m", "1d", "1sec", "μs", "1.5.5s",
	"3m0.000000001s", "1.5µs",
}

// Float inputs as Go float literals (strconv.ParseFloat); the test reads them with Number().
var floatInputs = []string{
	"0", "-0", "1", "-1", "0.1", "0.2", "0.30000000000000004", "1.5", "100", "123456", "999999", "1e6", "1000000",
	"1234567.5", "12345678", "1e20", "1e21", "1.5e21", "1e-4", "0.0001", "1e-5", "0.00001234", "1e-6",
	"1e-7", "1.5e-7", "123456789012345680000", "9007199254740993", "9223372036854775807", "1.7976931348623157e308",
	"5e-324", "2.2250738585072014e-308", "-1234567.5", "-0.000001", "3.14159", "1e100", "0.000123", "0.0000123",
}

// JSON texts of values as they arrive in objects; decoded the way kube decodes unstructured JSON
// (numbers are int64 when they fit, float64 otherwise).
var valueTexts = []string{
	`null`, `true`, `false`, `0`, `1`, `-1`, `1.0`, `1.5`, `1e3`, `1234567.5`, `0.000001`, `1e-7`, `1e20`, `1e21`,
	`12345678901234`, `4611686018427387904`, `18446744073709551616`, `"text"`, `""`, `"a b"`, `[]`, `{}`,
	`[1,"a",null,true]`, `{"b":1,"a":"x","c":[1.5,2]}`, `{"é":1,"z":2,"Z":3,"~":4,"\ue000":5,"\ud83d\ude00":6}`,
	`{"k":"<a href=\"x\">&amp;</a>"}`, `["\u2028\u2029","\ud800","\b\f\u0001"]`, `{"nested":{"a":[{"b":null}]}}`,
	`[1e21,1e-7,1234567.5,-0.5]`, `{"a b":"c d"}`, `"\ud83d\ude00"`,
}

type compareCase struct {
	Inputs  []string `json:"inputs"`
	Sorted  []int    `json:"sorted"`
	Compare [][]int  `json:"compare"`
}

type timeCase struct {
	Input   string `json:"input"`
	OK      bool   `json:"ok"`
	Unix    int64  `json:"unix,omitempty"`
	Nanos   int    `json:"nanos,omitempty"`
	String  string `json:"string,omitempty"`
	Message string `json:"error,omitempty"`
}

type durationCase struct {
	Input       string `json:"input"`
	OK          bool   `json:"ok"`
	Nanoseconds string `json:"nanoseconds,omitempty"`
	Message     string `json:"error,omitempty"`
}

type floatCase struct {
	Input string `json:"input"`
	V     string `json:"v"`
	JSON  string `json:"json"`
}

type valueCase struct {
	JSON    string `json:"json"`
	V       string `json:"v"`
	Marshal string `json:"marshal"`
}

type quoteCase struct {
	JSON  string `json:"json"`
	Quote string `json:"quote"`
}

func decode(text string) interface{} {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v interface{}
	if err := d.Decode(&v); err != nil {
		panic(fmt.Sprintf("%s: %v", text, err))
	}
	return numbers(v)
}

// numbers turns json.Number into int64 or float64, as apimachinery's unstructured decoding does.
func numbers(v interface{}) interface{} {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, err := t.Float64()
		if err != nil {
			panic(err)
		}
		return f
	case []interface{}:
		for i := range t {
			t[i] = numbers(t[i])
		}
	case map[string]interface{}:
		for k := range t {
			t[k] = numbers(t[k])
		}
	}
	return v
}

func marshal(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func main() {
	strs := make([]string, len(stringTexts))
	for i, text := range stringTexts {
		strs[i] = decode(text).(string)
	}
	cmp := compareCase{Inputs: stringTexts, Compare: make([][]int, len(strs))}
	order := make([]int, len(strs))
	for i := range strs {
		order[i] = i
		cmp.Compare[i] = make([]int, len(strs))
		for j := range strs {
			cmp.Compare[i][j] = strings.Compare(strs[i], strs[j])
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return strs[order[a]] < strs[order[b]] })
	cmp.Sorted = order

	times := []timeCase{}
	for _, in := range rfc3339Inputs {
		t, err := time.Parse(time.RFC3339, in)
		if err != nil {
			times = append(times, timeCase{Input: in, Message: err.Error()})
			continue
		}
		times = append(times, timeCase{Input: in, OK: true, Unix: t.Unix(), Nanos: t.Nanosecond(), String: t.UTC().String()})
	}

	durations := []durationCase{}
	for _, in := range durationInputs {
		d, err := time.ParseDuration(in)
		if err != nil {
			durations = append(durations, durationCase{Input: in, Message: err.Error()})
			continue
		}
		durations = append(durations, durationCase{Input: in, OK: true, Nanoseconds: strconv.FormatInt(int64(d), 10)})
	}

	floats := []floatCase{}
	for _, in := range floatInputs {
		f, err := strconv.ParseFloat(in, 64)
		if err != nil {
			panic(err)
		}
		if in == "-0" {
			f = math.Copysign(0, -1)
		}
		floats = append(floats, floatCase{Input: in, V: fmt.Sprintf("%v", f), JSON: marshal(f)})
	}

	values := []valueCase{}
	for _, text := range valueTexts {
		v := decode(text)
		values = append(values, valueCase{JSON: text, V: fmt.Sprintf("%v", v), Marshal: marshal(v)})
	}

	quotes := []quoteCase{}
	for _, text := range stringTexts {
		quotes = append(quotes, quoteCase{JSON: text, Quote: strconv.Quote(decode(text).(string))})
	}

	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(map[string]interface{}{
		"go":       runtime.Version(),
		"compare":  cmp,
		"rfc3339":  times,
		"duration": durations,
		"float":    floats,
		"values":   values,
		"quote":    quotes,
	})
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(out.Bytes())
}
