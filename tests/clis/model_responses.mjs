// model_responses.mjs — placeholder protocol module for fake_model.mjs; the real one replaces it.
export const NAME = 'responses';
export const matches = () => false;
export const read = () => ({ model: null, userTexts: [], lastUser: null, toolResults: [], tools: [] });
export const answer = (req, res) => res.writeHead(404).end();
