/** One admission plugin: what it mutates (admit) or checks (validate), for the operations it handles. */
import type { AdmissionAttributes, AdmissionOperation } from '../apimachinery/admission.js';

export interface AdmissionPlugin {
  name: string;
  operations: AdmissionOperation[];
  admit?(attrs: AdmissionAttributes): Promise<void>;
  validate?(attrs: AdmissionAttributes): Promise<void>;
}
