package main

import (
	_ "embed"
	"fmt"
	"sort"

	"go.yaml.in/yaml/v3"
)

// householdYAML is the simulated household's roster, written as the
// bridge's household.yaml.
//
//go:embed household.yaml
var householdYAML []byte

// Person is a member of the roster, as far as the script needs one.
type Person struct {
	ID   string
	Name string `yaml:"display_name"`
	Age  int    `yaml:"age"`
}

// Kid reports whether the bridge holds facts about p for review.
func (p Person) Kid() bool { return p.Age > 0 && p.Age < 18 }

// Roster is the household, by id in a stable order.
type Roster []Person

// parseRoster reads a household.yaml into a roster sorted by id.
func parseRoster(b []byte) (Roster, error) {
	var doc struct {
		People map[string]Person `yaml:"people"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("household.yaml: %w", err)
	}
	if len(doc.People) == 0 {
		return nil, fmt.Errorf("household.yaml: no people")
	}
	var r Roster
	for id, p := range doc.People {
		p.ID = id
		r = append(r, p)
	}
	sort.Slice(r, func(i, j int) bool { return r[i].ID < r[j].ID })
	return r, nil
}

// appearances are what the family look like, for the room view: a roster
// with them turns the face greeter off (the room view greets instead).
var appearances = map[string]string{
	"sam":  "tall man with a short beard and glasses",
	"jo":   "woman with curly red hair",
	"mia":  "girl of about eight with a ponytail",
	"nana": "older woman with short white hair and a cardigan",
}

// withAppearances is the household.yaml b with every known member's
// appearance added.
func withAppearances(b []byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("household.yaml: %w", err)
	}
	people, _ := doc["people"].(map[string]any)
	for id, look := range appearances {
		if p, ok := people[id].(map[string]any); ok {
			p["appearance"] = look
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("household.yaml: %w", err)
	}
	return out, nil
}

// kid is the roster's first kid; false when it has none.
func (r Roster) kid() (Person, bool) {
	for _, p := range r {
		if p.Kid() {
			return p, true
		}
	}
	return Person{}, false
}

// adults are the roster's members who are not kids.
func (r Roster) adults() []Person {
	var out []Person
	for _, p := range r {
		if !p.Kid() {
			out = append(out, p)
		}
	}
	return out
}
