/** generateName: the prefix plus five random characters, as kube's names.SimpleNameGenerator does it. */
import { randomInt } from 'node:crypto';

const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const RANDOM_LENGTH = 5;
const MAX_GENERATED_NAME_LENGTH = 63 - RANDOM_LENGTH;

export function generateName(prefix: string): string {
  let name = prefix.length > MAX_GENERATED_NAME_LENGTH ? prefix.slice(0, MAX_GENERATED_NAME_LENGTH) : prefix;
  for (let i = 0; i < RANDOM_LENGTH; i++) name += ALPHABET[randomInt(ALPHABET.length)];
  return name;
}
